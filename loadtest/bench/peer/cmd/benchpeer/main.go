// Command benchpeer is make bench-peer: pkg/idem against AWS Powertools
// idempotency on one private Redis (see package peer). "benchpeer run"
// runs every cell and writes results.json, table.md and peer.png into -out;
// "benchpeer client" is the Go client process a run starts for each
// pkg/idem cell.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/peer"
)

func main() {
	if err := run(context.Background(), os.Args, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchpeer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) < 2 {
		return errors.New("usage: benchpeer run|client [flags]")
	}
	switch args[1] {
	case "run":
		return runBench(ctx, args[0], args[2:], stdout, stderr)
	case "client":
		return runClient(ctx, args[2:], stdin, stdout, stderr)
	}
	return fmt.Errorf("unknown command %q (run or client)", args[1])
}

func runBench(ctx context.Context, self string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", ".run/bench/peer", "directory for results.json, table.md and peer.png")
	nodeDir := fs.String("node-dir", "loadtest/bench/peer/node", "the Node project, after npm ci")
	port := fs.Int("port", 6425, "port of the private redis-server")
	rounds := fs.Int("rounds", 3, "interleaved rounds (the summary is their median)")
	duration := fs.Duration("duration", 5*time.Second, "measured window per cell")
	warmup := fs.Duration("warmup", 2*time.Second, "warm-up per cell")
	libs := fs.String("libs", strings.Join([]string{peer.LibIdem, peer.LibIdemUnbatched, peer.LibPeer}, ","), "libraries")
	concs := fs.String("c", "1,64", "concurrencies")
	ops := fs.String("ops", peer.OpFresh+","+peer.OpReplay, "operations")
	if err := fs.Parse(args); err != nil {
		return err
	}
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server not on PATH (apt-get install redis-server): %w", err)
	}
	var cs []int
	for f := range strings.SplitSeq(*concs, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return fmt.Errorf("-c: bad concurrency %q", f)
		}
		cs = append(cs, n)
	}
	if *rounds < 1 {
		return errors.New("-rounds: at least 1")
	}
	selfPath, err := os.Executable()
	if err != nil {
		selfPath = self
	}
	nd, err := filepath.Abs(*nodeDir)
	if err != nil {
		return err
	}
	res, err := peer.Run(ctx, peer.Config{
		RedisServer: redisServer, Port: *port, NodeDir: nd, Self: []string{selfPath},
		Libs: strings.Split(*libs, ","), Concurrency: cs, Ops: strings.Split(*ops, ","),
		Rounds: *rounds, Duration: *duration, Warmup: *warmup, Log: stdout,
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	table := peer.Table(res)
	if err := os.WriteFile(filepath.Join(*out, "table.md"), []byte(table), 0o644); err != nil {
		return err
	}
	if err := peer.Plot(res, filepath.Join(*out, "peer.png")); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	fmt.Fprintf(stdout, "\n%s\nbench-peer: wrote %s/{results.json,table.md,peer.png}\n", table, *out)
	return nil
}

func runClient(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg peer.ClientConfig
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:6425", "Redis address")
	fs.StringVar(&cfg.Lib, "lib", peer.LibIdem, "library: "+strings.Join([]string{peer.LibIdem, peer.LibIdemUnbatched, peer.LibIdemAuto}, ", "))
	fs.StringVar(&cfg.Op, "op", peer.OpFresh, "operation: fresh or replay")
	fs.IntVar(&cfg.Concurrency, "c", 1, "concurrency")
	secs := fs.Float64("duration", 5, "measured seconds")
	warm := fs.Float64("warmup", 1, "warm-up seconds")
	fs.StringVar(&cfg.Prefix, "prefix", "go", "key prefix")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Duration = time.Duration(*secs * float64(time.Second))
	cfg.Warmup = time.Duration(*warm * float64(time.Second))
	return peer.RunClient(ctx, cfg, stdin, stdout)
}
