// Package pprofserve serves the net/http/pprof profiling handlers on a
// listener of their own, for a service that opts in through an environment
// variable.
package pprofserve

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Serve serves the net/http/pprof handlers under /debug/pprof/ on addr until
// ctx ends, then closes the listener and returns. It is meant to run in its
// own goroutine, on a listener that is never the service's own one, and
// only when the operator set envName (e.g. WORKER_PPROF_ADDR).
//
// Serve logs a warning that names envName and the address it listens on,
// because profiles expose the service's internals. When addr cannot be
// listened on, Serve logs that as a warning and returns at once: profiling
// is an aid, never a reason for the service to stop.
func Serve(ctx context.Context, addr, envName string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("pprof: listen", "addr", addr, "err", err)
		return
	}
	log.Warn("pprof enabled ("+envName+"); do not expose it", "addr", ln.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	_ = srv.Serve(ln)
}
