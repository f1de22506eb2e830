package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const usage = `usage:
  probe [-timeout 2s] URL               GET URL, succeed on 2xx
  probe wait [-timeout 5m] HOST:PORT... wait until each accepts TCP connections
  probe smoke [-api URL] [-wait D]      POST, replay and GET a payment (key in PROBE_API_KEY)`

// run is the whole program. It returns nil when the check passed.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	if len(args) > 1 {
		switch args[1] {
		case "smoke":
			return runSmoke(ctx, args[2:], getenv, stdout, stderr)
		case "wait":
			return runWait(ctx, args[2:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage) }
	timeout := fs.Duration("timeout", 2*time.Second, "give up after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want exactly one URL")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	return check(ctx, http.DefaultClient, fs.Arg(0))
}

// check GETs url and returns nil for a 2xx answer. The body is discarded.
func check(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
