// Command verify checks oncepay's invariants after a load test: it drains,
// collects the run's state from Postgres, the psp, Redis and RabbitMQ,
// checks it against what the k6 client saw and the fault log, prints the
// report and writes it as JSON with a timeline PNG. It exits 1 on any
// violation, including a fault run in which no fault landed mid-request.
//
//	verify [-run-dir .run/demo] [-drain 2m] [-faults=true] ...
//
// DATABASE_URL, REDIS_URL and AMQP_URL name the runtime's services.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "verify:", err)
		os.Exit(1)
	}
}
