module github.com/oncepay/oncepay/pkg/idem

go 1.26.0

require github.com/oncepay/oncepay/lua v0.0.0

replace github.com/oncepay/oncepay/lua => ../../lua
