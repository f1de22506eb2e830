module github.com/oncepay/oncepay/pkg/idem

go 1.26.0

require github.com/oncepay/oncepay/lua v0.0.0

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/oncepay/oncepay/lua => ../../lua

require (
	github.com/oncepay/oncepay/internal/redistest v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

replace github.com/oncepay/oncepay/internal/redistest => ../../internal/redistest

require github.com/oncepay/oncepay/internal/proc v0.0.0 // indirect

replace github.com/oncepay/oncepay/internal/proc => ../../internal/proc
