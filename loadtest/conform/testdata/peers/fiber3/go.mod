// A separate module (not in go.work): conform against Fiber v3's
// idempotency middleware. make conform-peers runs it.
module github.com/oncepay/oncepay/loadtest/conform/testdata/peers/fiber3

go 1.26.0

require (
	github.com/gofiber/fiber/v3 v3.1.0
	github.com/gofiber/storage/redis/v3 v3.4.3
	github.com/oncepay/oncepay/loadtest v0.0.0
)

require (
	github.com/andybalholm/brotli v1.2.0 // indirect
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gofiber/schema v1.7.0 // indirect
	github.com/gofiber/utils/v2 v2.0.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/klauspost/compress v1.18.4 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/philhofer/fwd v1.2.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/tinylib/msgp v1.6.3 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasthttp v1.69.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/crypto v0.48.0 // indirect
	golang.org/x/net v0.50.0 // indirect
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
