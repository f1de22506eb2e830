package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"time"
)

// runWait waits until every host:port in args accepts a TCP connection, or
// fails after -timeout. It is the init container that keeps a pod from
// crash-looping while the services it needs start (Kubernetes has no
// depends_on).
func runWait(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe wait", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	interval := fs.Duration("interval", time.Second, "time between attempts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("wait: want at least one host:port")
	}
	for _, addr := range fs.Args() {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("wait: %q is not host:port", addr)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var d net.Dialer
	for _, addr := range fs.Args() {
		t0 := time.Now()
		for attempt := 0; ; attempt++ {
			actx, acancel := context.WithTimeout(ctx, 2*time.Second)
			conn, err := d.DialContext(actx, "tcp", addr)
			acancel()
			if err == nil {
				_ = conn.Close() // only the connect mattered
				fmt.Fprintf(stdout, "%s is up (%s)\n", addr, time.Since(t0).Round(time.Millisecond))
				break
			}
			if attempt == 0 {
				fmt.Fprintf(stdout, "waiting for %s: %v\n", addr, err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("wait: %s not reachable after %s: %v", addr, *timeout, err)
			case <-time.After(*interval):
			}
		}
	}
	return nil
}
