module github.com/oncepay/oncepay/services/worker

go 1.26.0
