module github.com/oncepay/oncepay/lua

go 1.26.0
