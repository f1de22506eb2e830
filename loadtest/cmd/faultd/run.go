package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/loadtest/container"
	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/netfault"
	"github.com/oncepay/oncepay/loadtest/process"
	"github.com/oncepay/oncepay/pkg/service/dial"
)

// backend is what faultd drives: a runtime's fault.Backend that can also
// tell whether a replica has work in flight.
type backend interface {
	fault.Backend
	fault.Prober
}

// newBackend returns the backend of cfg.Runtime: supervised processes
// (local), Compose containers (compose) or the Helm release's pods (kind).
func newBackend(cfg config, rdb redis.UniversalClient) backend {
	var psp *fault.PSPAdmin
	if cfg.PSPAdminURL != "" {
		psp = &fault.PSPAdmin{URL: cfg.PSPAdminURL, Token: cfg.PSPToken}
	}
	switch cfg.Runtime {
	case "compose":
		return container.NewDocker(container.DockerConfig{
			Project: cfg.ComposeProject, Replicas: cfg.Replicas, Redis: rdb, Docker: cfg.Docker,
			HealthTimeout: cfg.RestartTimeout, PSP: psp,
		})
	case "kind":
		return container.NewKube(container.KubeConfig{
			Kubectl: cfg.Kubectl, Context: cfg.KubeContext, Namespace: cfg.KubeNamespace, Release: cfg.KubeRelease,
			Replicas: cfg.Replicas, Redis: rdb, KillMode: cfg.KubeKill, ReadyTimeout: cfg.RestartTimeout, PSP: psp,
		})
	}
	pc := process.Config{
		RunDir: cfg.RunDir, Replicas: cfg.Replicas, Harness: cfg.Harness, HarnessEnv: cfg.HarnessEnv, Redis: rdb, PSP: psp,
	}
	if cfg.AMQPURL != "" {
		pc.Broker = &fault.Broker{URL: cfg.AMQPURL}
	}
	return process.New(pc)
}

// run serves the fault driver until ctx ends or SIGINT/SIGTERM arrives. It
// writes JSON logs to stdout and one line per fault, for people, to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 1 {
		fmt.Fprintln(stderr, "usage: faultd (configured by environment; see docs/demo.md)")
		return fmt.Errorf("unexpected arguments %q", args[1:])
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil))

	rdb, err := dial.Redis(cfg.RedisMode, cfg.RedisURL, dial.RedisTuning{ClusterAddrs: cfg.RedisAddrs})
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	defer rdb.Close()

	if err := os.MkdirAll(filepath.Dir(cfg.EventsPath), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(cfg.EventsPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("fault log: %w", err)
	}
	defer f.Close()
	events := fault.NewEventLog(f)

	backend := newBackend(cfg, rdb)
	dcfg := fault.DriverConfig{
		WaitInFlight: cfg.WaitInFlight,
		APIs:         names(cfg.Replicas, "api"), Workers: names(cfg.Replicas, "worker"),
		OnEvent: func(e fault.Event) { fmt.Fprintf(stderr, "%s %s\n", e.Time.Format("15:04:05.000"), e) },
	}
	if cfg.ToxiproxyURL != "" {
		dcfg.Network = netfault.New(cfg.ToxiproxyURL)
	}
	driver := fault.NewDriver(backend, backend, events, log, dcfg)
	// the network faults still in force end with faultd, whatever way it
	// stops (their toxics would outlive it otherwise)
	defer func() {
		if err := driver.Close(); err != nil {
			log.Error("undo network faults", "err", err)
		}
	}()
	srv := &http.Server{
		Handler: fault.NewServer(fault.ServerDeps{
			Logger: log, Driver: driver, Events: events,
			APIs: names(cfg.Replicas, "api"), Workers: names(cfg.Replicas, "worker"), Runtime: cfg.Runtime,
			Topology: cfg.Topology, MatrixKinds: cfg.MatrixKinds,
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	log.Info("listening", "addr", ln.Addr().String(), "events", cfg.EventsPath, "runtime", cfg.Runtime, "topology", cfg.Topology, "backend", fmt.Sprintf("%T", backend),
		"network", cfg.ToxiproxyURL != "")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// undo the network faults first: their handlers wait out the faults'
	// durations, and return once undone
	if err := driver.Close(); err != nil {
		log.Error("undo network faults", "err", err)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}
