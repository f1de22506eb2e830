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
	"path/filepath"
	"syscall"
	"time"
)

// run serves the run directory until ctx ends or a signal comes.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("run", "", "the run directory (default: the newest report.html under .run)")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (port 0: a free one)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *dir == "" {
		d, err := newest(".run")
		if err != nil {
			return err
		}
		*dir = d
	}
	if _, err := os.Stat(filepath.Join(*dir, "report.html")); err != nil {
		return fmt.Errorf("%s has no report.html (make demo writes one): %w", *dir, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(*dir)), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stdout, "serving %s\n  http://%s/report.html\n(Ctrl-C stops it)\n", *dir, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newest returns the directory under root whose report.html was written
// last.
func newest(root string) (string, error) {
	pages, err := filepath.Glob(filepath.Join(root, "*", "report.html"))
	if err != nil {
		return "", err
	}
	var best string
	var at time.Time
	for _, p := range pages {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(at) {
			best, at = filepath.Dir(p), fi.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("no report.html under %s: run make demo first, or give RUN=<run dir>", root)
	}
	return best, nil
}
