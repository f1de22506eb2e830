package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/oncepay/oncepay/internal/proc"
	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/peer"
	"github.com/oncepay/oncepay/loadtest/bench/report"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// run is the whole program: it reads the configuration once, owns signals,
// runs the phases and always stops what it started and writes what it has.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 3 && args[1] == "report" {
		return renderReport(args[2], stdout)
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: bench | bench report DIR")
		return fmt.Errorf("bad arguments %q", args[1:])
	}
	started := time.Now()
	cfg, err := loadConfig(getenv, started)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Out, "logs"), 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(cfg.Out, "bench.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	b := &bench{cfg: cfg, out: io.MultiWriter(stdout, logf), res: &results.Results{Started: started, Quick: cfg.Quick,
		Machine: describeMachine(ctx, cfg), Commit: gitCommit(ctx, cfg.Repo), Settings: cfg.Settings}}
	if p, err := peer.Load(cfg.Peer); err == nil {
		p.Cells = nil // the summary is what the report and the targets read
		b.res.Peer = p
	} else if !errors.Is(err, os.ErrNotExist) {
		b.note("peer results: %v", err)
	}
	b.logf("results in %s (quick=%v, phases %v); load average before: %v", cfg.Out, cfg.Quick, cfg.Phases, b.res.Machine.LoadBefore)

	ctx, cancel := context.WithTimeout(ctx, cfg.Limit)
	defer cancel()
	err = b.runPhases(ctx)
	b.procs.StopAll(20 * time.Second)
	b.stopPatroni()
	b.closeClients()
	b.res.Elapsed = time.Since(started)
	if serr := b.res.Save(filepath.Join(cfg.Out, "results.json")); serr != nil {
		err = errors.Join(err, serr)
	}
	if rerr := renderReport(cfg.Out, b.out); rerr != nil {
		err = errors.Join(err, rerr)
	}
	latest := filepath.Join(filepath.Dir(cfg.Out), "..", "latest")
	_ = os.Remove(latest)
	_ = os.Symlink(cfg.Out, latest)
	b.logf("done in %s; results in %s", b.res.Elapsed.Round(time.Second), cfg.Out)
	return err
}

// bench is one run in progress.
type bench struct {
	cfg    config
	out    io.Writer
	res    *results.Results
	procs  proc.Group
	cl     *clients
	copies []*variant // the e2e copies (boundary on, then off or patroni), or the overload phase's (new, base)
	// patroni is the e2e copy's Postgres under Patroni (BENCH_PG=patroni).
	patroni *patroniCluster

	baseCommit string // what BENCH_BASE resolved to (the overload phase)

	vacuumed  time.Duration // spent in vacuum between e2e phases
	rewritten time.Duration // spent in BGREWRITEAOF between e2e phases
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.out, "%s bench: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// phase logs the start of a phase with the load average.
func (b *bench) phase(name string) {
	b.logf("== %s (load average %.2f)", name, cpu.LoadAvg())
}

func (b *bench) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	b.res.Notes = append(b.res.Notes, n)
	b.logf("NOTE: %s", n)
}

func (b *bench) runPhases(ctx context.Context) error {
	if err := b.build(ctx); err != nil {
		return err
	}
	if err := b.prepare(ctx); err != nil {
		return err
	}
	if b.cfg.Postgres == "patroni" && b.cfg.Phases["e2e"] {
		if err := b.startPatroni(ctx); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	for _, ph := range []struct {
		name string
		run  func(context.Context) error
	}{{"go", b.goBench}, {"e2e", b.e2e}, {"overload", b.overload}} {
		if !b.cfg.Phases[ph.name] {
			continue
		}
		if err := ph.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", ph.name, err)
		}
		if err := b.res.Save(filepath.Join(b.cfg.Out, "results.json")); err != nil {
			return err
		}
	}
	return nil
}

func renderReport(dir string, w io.Writer) error {
	r, err := results.Load(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	return report.Write(r, dir, w)
}

// command runs argv to completion within timeout, in dir, with env added to
// the environment (proc.Run); its output goes to logs/<name>.log too.
func (b *bench) command(ctx context.Context, name string, timeout time.Duration, dir string, env []string, argv ...string) (proc.Result, error) {
	log, err := b.log(name)
	if err != nil {
		return proc.Result{}, err
	}
	defer log.Close()
	return proc.Run(ctx, proc.Spec{Name: name, Argv: argv, Env: env, Dir: dir, Log: log}, timeout)
}

// start starts a long-running process of the run, its output in
// logs/<name>.log.
func (b *bench) start(name string, argv, env []string) (*proc.Proc, error) {
	log, err := b.log(name)
	if err != nil {
		return nil, err
	}
	p, err := b.procs.Start(proc.Spec{Name: name, Argv: argv, Env: env, Dir: b.cfg.Out, Log: log})
	if err != nil {
		log.Close()
		return nil, err
	}
	go func() { <-p.Done(); log.Close() }()
	return p, nil
}

// log opens logs/<name>.log for appending.
func (b *bench) log(name string) (*os.File, error) {
	return os.OpenFile(b.logPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

func (b *bench) logPath(name string) string { return filepath.Join(b.cfg.Out, "logs", name+".log") }

// bin returns the path of a binary the run built.
func (b *bench) bin(name string) string { return filepath.Join(b.cfg.Out, "bin", name) }

// build compiles the services and the pkg/idem test binary into the run
// directory; the copy without the boundary runs <name>-compare, the
// teaching build (-tags compare) that knows IDEM_STRATEGY=off.
func (b *bench) build(ctx context.Context) error {
	b.phase("build")
	ph := b.cfg.Phases
	for tool, needed := range map[string]bool{b.cfg.Benchstat: ph["go"], b.cfg.K6: ph["e2e"] || ph["overload"]} {
		if _, err := os.Stat(tool); needed && err != nil {
			return fmt.Errorf("%s is missing (make bench installs k6 and benchstat)", tool)
		}
	}
	// {binary, go command, arguments}; api and psp always: prepare migrates with them.
	builds := [][]string{{"api", "build", "./services/api/cmd/api"}, {"psp", "build", "./services/psp/cmd/psp"}}
	if ph["e2e"] {
		builds = append(builds, []string{"worker", "build", "./services/worker/cmd/worker"},
			[]string{"api-compare", "build", "-tags", "compare", "./services/api/cmd/api"},
			[]string{"worker-compare", "build", "-tags", "compare", "./services/worker/cmd/worker"})
	}
	if ph["overload"] && !ph["e2e"] {
		builds = append(builds, []string{"worker", "build", "./services/worker/cmd/worker"})
	}
	if ph["go"] {
		builds = append(builds, []string{"idem.test", "test", "-c", "./pkg/idem"})
	}
	for _, bd := range builds {
		if _, err := b.command(ctx, "build", 5*time.Minute, b.cfg.Repo, nil, append([]string{"go", bd[1], "-o", b.bin(bd[0])}, bd[2:]...)...); err != nil {
			return err
		}
	}
	if ph["overload"] {
		return b.buildBase(ctx)
	}
	return nil
}

var modelName = regexp.MustCompile(`(?m)^model name\s*:\s*(.+)$`)

// describeMachine says where the run happens: CPU, memory, kernel, the
// versions of Redis and k6, and the load average before bench started
// anything.
func describeMachine(ctx context.Context, cfg config) results.Machine {
	m := results.Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), LoadBefore: cpu.LoadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if mm := modelName.FindSubmatch(b); mm != nil {
			m.CPU = string(mm[1])
		}
	}
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		m.MemoryGiB = float64(si.Totalram) * float64(si.Unit) / (1 << 30)
	}
	m.Kernel = firstLine(ctx, "uname", "-r")
	m.Versions = []string{firstLine(ctx, "redis-server", "--version"), firstLine(ctx, cfg.K6, "version")}
	return m
}

// gitCommit returns the short HEAD of repo, with "+dirty" when the working
// tree has uncommitted changes (the run builds from the working tree).
func gitCommit(ctx context.Context, repo string) string {
	c := firstLine(ctx, "git", "-C", repo, "rev-parse", "--short", "HEAD")
	if st := firstLine(ctx, "git", "-C", repo, "status", "--porcelain", "--untracked-files=no"); st != "" {
		c += "+dirty"
	}
	return c
}

// firstLine is the first line of argv's output, or "<argv[0]>: unknown".
func firstLine(ctx context.Context, argv ...string) string {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return argv[0] + ": unknown"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}
