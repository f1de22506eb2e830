// Command psp is the payment-provider simulator: a Stripe-like card processor
// with idempotency keys, injectable faults and a ledger of every call.
//
// Usage:
//
//	psp [serve]   serve HTTP until SIGINT or SIGTERM
//	psp migrate   apply the database migrations and exit
//
// Configuration is read from the environment; see config.go or docs/psp.md.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "psp: %v\n", err)
		os.Exit(1)
	}
}
