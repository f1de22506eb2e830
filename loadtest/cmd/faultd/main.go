// Command faultd is the fault driver of oncepay's fault test: an HTTP
// service that the k6 "faults" scenario calls to kill replicas, restart
// Redis and RabbitMQ and flush Redis, each fault logged as a JSON line. See
// package fault for the HTTP interface and docs/demo.md for the test.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "faultd:", err)
		os.Exit(1)
	}
}
