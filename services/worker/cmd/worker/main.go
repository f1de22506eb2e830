// Command worker charges payments: it consumes payment.initiated messages
// from RabbitMQ and, behind the Redis idempotency boundary, charges each
// payment once through the psp and records the outcome in Postgres.
//
// Usage:
//
//	worker    run until SIGINT or SIGTERM
//
// Configuration is read from the environment; see config.go or docs/worker.md.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "worker: %v\n", err)
		os.Exit(1)
	}
}
