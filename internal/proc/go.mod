module github.com/oncepay/oncepay/internal/proc

go 1.26.0
