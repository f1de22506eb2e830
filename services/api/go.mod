module github.com/oncepay/oncepay/services/api

go 1.26.0
