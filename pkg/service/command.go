package service

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Command returns the subcommand args names: args[1], or cmds[0] when
// there is none. When args has more, or names none of cmds, it writes
// usage to stderr and returns an error.
func Command(args []string, stderr io.Writer, usage string, cmds ...string) (string, error) {
	cmd := cmds[0]
	if len(args) > 1 {
		cmd = args[1]
	}
	for _, c := range cmds {
		if c == cmd && len(args) <= 2 {
			return cmd, nil
		}
	}
	fmt.Fprintln(stderr, usage)
	return "", fmt.Errorf("bad arguments %q", args[1:])
}

// NewLogger returns the JSON logger a service writes to w at level, every
// line naming the service and, if set, the instance.
func NewLogger(w io.Writer, level slog.Level, service, instance string) *slog.Logger {
	log := slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})).With("service", service)
	if instance != "" {
		log = log.With("instance", instance)
	}
	return log
}

// NewRegistry returns a Prometheus registry holding the Go runtime and
// process collectors, which every service's /metrics exposes.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
