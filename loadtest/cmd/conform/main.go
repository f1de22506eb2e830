// Command conform checks an Idempotency-Key endpoint against the rules of
// draft-ietf-httpapi-idempotency-key-header-07, storms it, and checks the
// storm's history (package loadtest/conform; docs/conform.md).
//
//	conform -url http://127.0.0.1:8080/v1/payments \
//	  -H 'Authorization: Bearer sk_a' -H 'Content-Type: application/json' \
//	  -H2 'Authorization: Bearer sk_b' \
//	  -body '{"amount": 1250, "currency": "EUR", "customer_id": "c1", "description": "{{vary}}"}' \
//	  -out .run/conform
//
// It exits 0 when every applicable MUST and SHOULD rule holds, 1 when one
// does not, 2 on a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
