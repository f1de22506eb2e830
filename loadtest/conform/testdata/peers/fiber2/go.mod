// A separate module (not in go.work): conform against Fiber v2's
// idempotency middleware. make conform-peers runs it.
module github.com/oncepay/oncepay/loadtest/conform/testdata/peers/fiber2

go 1.26.0

require (
	github.com/gofiber/fiber/v2 v2.52.15
	github.com/gofiber/storage/redis/v3 v3.4.3
	github.com/oncepay/oncepay/loadtest v0.0.0
)

require (
	github.com/andybalholm/brotli v1.1.0 // indirect
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/klauspost/compress v1.18.3 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/philhofer/fwd v1.1.3-0.20240916144458-20a13a1f6b7c // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/tinylib/msgp v1.2.5 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasthttp v1.51.0 // indirect
	github.com/valyala/tcplisten v1.0.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace (
	github.com/oncepay/oncepay/internal/proc => ../../../../../internal/proc
	github.com/oncepay/oncepay/internal/redistest => ../../../../../internal/redistest
	github.com/oncepay/oncepay/internal/testenv => ../../../../../internal/testenv
	github.com/oncepay/oncepay/loadtest => ../../../..
	github.com/oncepay/oncepay/lua => ../../../../../lua
	github.com/oncepay/oncepay/pkg/idem => ../../../../../pkg/idem
	github.com/oncepay/oncepay/pkg/message => ../../../../../pkg/message
	github.com/oncepay/oncepay/pkg/service => ../../../../../pkg/service
	github.com/oncepay/oncepay/services/api => ../../../../../services/api
)
