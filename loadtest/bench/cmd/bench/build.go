package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// bin returns the path of a binary the run built.
func (b *bench) bin(name string) string { return filepath.Join(b.cfg.Out, "bin", name) }

// build compiles the services, the ceiling stages and the pkg/idem test
// binary into the run directory, so that nothing in bin/ (used by the local
// runtime) is replaced.
func (b *bench) build(ctx context.Context) error {
	b.phase("build")
	ph := b.cfg.Phases
	tools := map[string]bool{b.cfg.Benchstat: ph["go"], b.cfg.PGBench: ph["ceilings"] || ph["colocated"],
		b.cfg.K6: ph["colocated"] || ph["e2e"]}
	for tool, needed := range tools {
		if _, err := os.Stat(tool); needed && err != nil {
			return fmt.Errorf("%s is missing (make bench installs k6 and benchstat; pgbench comes with postgresql-client)", tool)
		}
	}
	// api and psp are always built: prepare migrates with them.
	pkgs := map[string]string{"api": "./services/api/cmd/api", "psp": "./services/psp/cmd/psp"}
	if ph["e2e"] {
		pkgs["worker"] = "./services/worker/cmd/worker"
	}
	if ph["colocated"] {
		pkgs["benchstage"] = "./loadtest/bench/cmd/benchstage"
	}
	for name, pkg := range pkgs {
		if _, err := b.command(ctx, "build", 5*time.Minute, b.cfg.Repo, nil, "go", "build", "-o", b.bin(name), pkg); err != nil {
			return err
		}
	}
	if !ph["go"] {
		return nil
	}
	_, err := b.command(ctx, "build", 5*time.Minute, b.cfg.Repo, nil, "go", "test", "-c", "-o", b.bin("idem.test"), "./pkg/idem")
	return err
}
