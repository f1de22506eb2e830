package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const usage = "usage: benchstage http|redis|amqp [flags] (benchstage <stage> -h lists the flags)"

// run is the whole program; it owns signals.
func run(ctx context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) < 2 {
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("no stage given")
	}
	fs := flag.NewFlagSet(args[1], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr     = fs.String("addr", "127.0.0.1:9190", "http: listen address")
		url      = fs.String("url", "", "redis: redis:// URL; amqp: amqp:// URL")
		rate     = fs.Float64("rate", 500, "payments (or messages) per second")
		duration = fs.Duration("duration", 20*time.Second, "length of the schedule")
		workers  = fs.Int("workers", 64, "slots that may run at once")
		begin    = fs.String("begin", "lua/begin.lua", "redis: path of the begin script")
		complete = fs.String("complete", "lua/complete.lua", "redis: path of the complete script")
		queue    = fs.String("queue", "bench.ceiling", "amqp: quorum queue to publish to and consume from")
	)
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if args[1] != "http" && (*url == "" || *rate <= 0 || *duration <= 0) {
		return fmt.Errorf("%s: -url, a positive -rate and a positive -duration are required", args[1])
	}
	var (
		out any
		err error
	)
	switch args[1] {
	case "http":
		return serveHTTP(ctx, *addr, stderr)
	case "redis":
		out, err = runRedis(ctx, redisConfig{URL: *url, Rate: *rate, Duration: *duration, Workers: *workers,
			BeginPath: *begin, CompletePath: *complete})
	case "amqp":
		out, err = runAMQP(ctx, amqpConfig{URL: *url, Rate: *rate, Duration: *duration, Workers: *workers, Queue: *queue})
	default:
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown stage %q", args[1])
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(out)
}
