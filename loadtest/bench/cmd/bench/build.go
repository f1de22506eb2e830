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

// build compiles the services and the pkg/idem test binary into the run
// directory, so that nothing in bin/ (used by the local runtime) is
// replaced. The api and the worker are built twice: as in production for
// the boundary's copy, and with -tags compare (the teaching build, which
// knows IDEM_STRATEGY=off) for the copy without it, as <name>-compare.
func (b *bench) build(ctx context.Context) error {
	b.phase("build")
	ph := b.cfg.Phases
	tools := map[string]bool{b.cfg.Benchstat: ph["go"], b.cfg.K6: ph["e2e"]}
	for tool, needed := range tools {
		if _, err := os.Stat(tool); needed && err != nil {
			return fmt.Errorf("%s is missing (make bench installs k6 and benchstat)", tool)
		}
	}
	// api and psp are always built: prepare migrates with them.
	builds := [][]string{{"api", "./services/api/cmd/api"}, {"psp", "./services/psp/cmd/psp"}}
	if ph["e2e"] {
		builds = append(builds, []string{"worker", "./services/worker/cmd/worker"},
			[]string{"api-compare", "-tags", "compare", "./services/api/cmd/api"},
			[]string{"worker-compare", "-tags", "compare", "./services/worker/cmd/worker"})
	}
	for _, bd := range builds {
		if _, err := b.command(ctx, "build", 5*time.Minute, b.cfg.Repo, nil, append([]string{"go", "build", "-o", b.bin(bd[0])}, bd[1:]...)...); err != nil {
			return err
		}
	}
	if !ph["go"] {
		return nil
	}
	_, err := b.command(ctx, "build", 5*time.Minute, b.cfg.Repo, nil, "go", "test", "-c", "-o", b.bin("idem.test"), "./pkg/idem")
	return err
}
