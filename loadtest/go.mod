module github.com/oncepay/oncepay/loadtest

go 1.26.0
