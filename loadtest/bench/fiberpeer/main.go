// Command fiberpeer measures oncepay's idempotency middleware (idemhttp,
// net/http, Redis) beside Fiber's (v2 and v3, on their in-memory storage
// and on Redis), each on a trivial handler in its own process on loopback:
// requests/s and CPU per request (the server's, from /proc, and Redis's,
// from INFO) at 1 and 64 concurrent clients, interleaved, the median of
// several rounds; then the memory each holds per key (the server's live
// heap, Redis's used_memory). make bench-middleware runs it.
//
// It is its own module, outside go.work, so that Fiber never enters the
// oncepay module's graph.
//
//	fiberpeer run [-redis-port 6426] [-secs 4] [-rounds 5] [-keys 20000] [-only NAME] [-gotest idemhttp.test [-gocount 8] [-benchstat bin]] [-out dir]
//	fiberpeer serve -variant NAME -redis URL   (run starts these)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fiberpeer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: fiberpeer run|serve [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch args[0] {
	case "serve":
		name := fs.String("variant", "", "name of the variant to serve")
		redisURL := fs.String("redis", "", "Redis URL (database 0; each variant uses its own)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		for _, v := range variants {
			if v.name == *name {
				return serve(ctx, v, *redisURL, stdout)
			}
		}
		return fmt.Errorf("no variant %q", *name)
	case "run":
		cfg := config{}
		fs.IntVar(&cfg.redisPort, "redis-port", 6426, "port of the private redis-server the run starts")
		fs.DurationVar(&cfg.window, "secs", 4*time.Second, "length of one measurement")
		fs.IntVar(&cfg.rounds, "rounds", 5, "rounds (each measures every variant at every concurrency once)")
		fs.IntVar(&cfg.keys, "keys", 20000, "new keys sent to measure memory per key")
		fs.StringVar(&cfg.only, "only", "", "measure only the variants whose name contains this")
		fs.StringVar(&cfg.goTest, "gotest", "", "the idemhttp test binary: run BenchmarkMiddleware first")
		fs.IntVar(&cfg.goCount, "gocount", 8, "BenchmarkMiddleware runs")
		fs.StringVar(&cfg.benchstat, "benchstat", "", "benchstat binary for BenchmarkMiddleware's table")
		fs.StringVar(&cfg.out, "out", ".run/bench/middleware", "directory for results.json and report.md")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return measure(ctx, cfg, stdout)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// serve runs v on two loopback ports, the server and its ops listener
// (GET /heap), prints "<addr> <ops addr>" and serves until ctx ends.
func serve(ctx context.Context, v variant, redisURL string, stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ops, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(ops, opsHandler()) }()
	fmt.Fprintln(stdout, ln.Addr().String(), ops.Addr().String())
	return v.serve(ctx, ln, redisURL)
}
