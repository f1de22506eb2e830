module github.com/oncepay/oncepay/internal/archtest

go 1.26.0
