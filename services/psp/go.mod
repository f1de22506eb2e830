module github.com/oncepay/oncepay/services/psp

go 1.26.0
