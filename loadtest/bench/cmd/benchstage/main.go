// Command benchstage does the bare work of one oncepay stage, for the
// colocated ceiling run of `make bench` (see docs/PERFORMANCE.md):
//
//	benchstage http  -addr 127.0.0.1:9190
//	    a trivial JSON handler: POST decodes the payment JSON and answers 202
//	    with a small JSON body; serves until SIGINT/SIGTERM
//	benchstage redis -url redis://... -rate X -duration 20s -begin lua/begin.lua -complete lua/complete.lua
//	    two EVALSHA per payment (begin, then complete, on a fresh key) at X
//	    payments/s through a bare go-redis client
//	benchstage amqp  -url amqp://... -rate X -duration 20s -queue bench.ceiling
//	    a persistent publish to a quorum queue with a publisher confirm, and a
//	    consumer that acks, at X messages/s
//
// The redis and amqp stages print one JSON object (pace.Result plus
// stage-specific fields) on stdout when their schedule ends.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchstage:", err)
		os.Exit(1)
	}
}
