// A separate module (not in go.work): conform against the npm
// express-idempotency middleware on app.js. make conform-peers runs it.
module github.com/oncepay/oncepay/loadtest/conform/testdata/peers/express

go 1.26.0

require github.com/oncepay/oncepay/loadtest v0.0.0

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/sync v0.23.0 // indirect
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
