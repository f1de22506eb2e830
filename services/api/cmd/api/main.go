// Command api is oncepay's payments API: it accepts payments over HTTP
// behind the Redis idempotency boundary, records them in Postgres with a
// transactional outbox, and publishes payment.initiated messages to
// RabbitMQ.
//
// Usage:
//
//	api [serve]   serve HTTP until SIGINT or SIGTERM (the default)
//	api migrate   apply the database migrations and exit
//
// Configuration is read from the environment; see docs/configuration.md.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "api: %v\n", err)
		os.Exit(1)
	}
}
