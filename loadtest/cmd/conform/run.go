package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/conform"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// headers is a repeatable "Name: value" flag.
type headers struct{ h http.Header }

func (f *headers) String() string { return "" }

func (f *headers) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("header %q: want 'Name: value'", v)
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

// durations is a comma-separated list of durations.
type durations []time.Duration

func (d *durations) String() string { return "" }

func (d *durations) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		x, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("fault time %q: %w", s, err)
		}
		*d = append(*d, x)
	}
	return nil
}

// run parses args, checks the target and writes the reports; it returns
// the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		t                         conform.Target
		h, h2, fail               headers
		faultAt                   durations
		bodyFile, effURL, effCmd  string
		replayHeaders, outDir     string
		jsonOut, quiet            bool
		stormKeys, stormClients   int
		stormParallel, stormTries int
		stormOther                int
		effPG, effSQL             string
	)
	fs.StringVar(&t.URL, "url", "", "the endpoint (required), e.g. http://127.0.0.1:8080/v1/payments")
	fs.StringVar(&t.Method, "method", "POST", "the method of the operation")
	fs.Var(&h, "H", "a header of every request, 'Name: value' (repeatable): the credential, Content-Type...")
	fs.Var(&h2, "H2", "a header of the second credential (repeatable); replaces -H's field of that name; none: the scope rule is n/a")
	fs.StringVar(&t.Body, "body", "", "the request body; must contain "+conform.Vary+", the value varied for another payload")
	fs.StringVar(&bodyFile, "body-file", "", "read the body from this file instead")
	fs.StringVar(&t.KeyHeader, "key-header", "Idempotency-Key", "the key's header field")
	fs.IntVar(&t.MaxKeyLen, "max-key-len", 255, "the longest key the target documents")
	fs.StringVar(&t.ReplayMarker, "replay-marker", "Idempotent-Replayed", "the header that marks a replay ('-': none)")
	fs.StringVar(&replayHeaders, "replay-headers", "Content-Type,Location", "headers a replay must repeat, comma-separated")
	fs.Var(&fail, "fail-header", "a header that makes the target answer 5xx, 'Name: value'; none: the 5xx rule is n/a")
	fs.StringVar(&effURL, "effects-url", "", "GET this URL ({key} {credential} {location}) for the effect count (an integer body, or 2xx=1 / 404=0)")
	fs.StringVar(&effCmd, "effects-cmd", "", "run this sh command for the effect count (env CONFORM_KEY, CONFORM_CREDENTIAL, CONFORM_LOCATION)")
	fs.StringVar(&effPG, "effects-pg", "", "a Postgres URL to read the effect count from with -effects-sql")
	fs.StringVar(&effSQL, "effects-sql", "", "the count query for -effects-pg: $1 is the key, $2 the credential (a or b)")
	fs.StringVar(&t.ExpiryDoc, "expiry-doc", "", "URL of the published key expiry policy; none: the expiry rule is n/a")
	fs.StringVar(&t.GetURL, "get-url", "", "URL for the key-on-GET rule (default -url)")
	fs.DurationVar(&t.Timeout, "timeout", 10*time.Second, "one request's limit")
	fs.IntVar(&stormKeys, "storm-keys", 20, "keys stormed (0: no storm)")
	fs.IntVar(&stormClients, "storm-clients", 4, "clients per key, all at once")
	fs.IntVar(&stormParallel, "storm-parallel", 32, "keys in flight at once")
	fs.IntVar(&stormTries, "storm-tries", 12, "attempts per client before it gives up")
	fs.IntVar(&stormOther, "storm-other-every", 4, "another payload on every n-th key (0: never)")
	fs.StringVar(&t.Storm.FaultCommand, "fault-cmd", "", "a sh command run at each -fault-at during the storm (env CONFORM_FAULT_INDEX)")
	fs.Var(&faultAt, "fault-at", "when to run -fault-cmd, after the storm's start: comma-separated durations")
	fs.Int64Var(&t.Storm.Seed, "seed", 1, "seed of the backoff jitter")
	fs.StringVar(&outDir, "out", "", "write report.json, junit.xml, report.html (and history.html when a key fails) here")
	fs.BoolVar(&jsonOut, "json", false, "print the JSON report on stdout instead of the table")
	fs.BoolVar(&quiet, "q", false, "no progress lines on stderr")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "conform: %s (conform -h lists the flags)\n", msg)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usage(fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	if bodyFile != "" {
		if t.Body != "" {
			return usage("give -body or -body-file, not both")
		}
		b, err := os.ReadFile(bodyFile)
		if err != nil {
			return usage(err.Error())
		}
		t.Body = string(b)
	}
	if (effPG == "") != (effSQL == "") {
		return usage("-effects-pg and -effects-sql go together")
	}
	switch n := btoi(effURL != "") + btoi(effCmd != "") + btoi(effPG != ""); {
	case n > 1:
		return usage("give one of -effects-url, -effects-cmd and -effects-pg, not both")
	case effPG != "":
		e, err := conform.NewEffectSQL(ctx, effPG, effSQL)
		if err != nil {
			return usage(err.Error())
		}
		defer e.Pool.Close()
		t.Effects = e
	case effURL != "":
		t.Effects = conform.EffectURL{Template: effURL, Header: h.h}
	case effCmd != "":
		t.Effects = conform.EffectCommand{Command: effCmd}
	}
	if stormKeys == 0 {
		stormKeys = -1
	}
	if stormOther == 0 {
		stormOther = -1
	}
	t.Header, t.OtherHeader, t.FailHeader = h.h, h2.h, fail.h
	t.ReplayHeaders = strings.FieldsFunc(replayHeaders, func(r rune) bool { return r == ',' || r == ' ' })
	if t.ReplayHeaders == nil {
		t.ReplayHeaders = []string{}
	}
	t.Storm = conform.Storm{Keys: stormKeys, Clients: stormClients, Parallel: stormParallel, MaxTries: stormTries,
		OtherEvery: stormOther, FaultCommand: t.Storm.FaultCommand, FaultAt: faultAt, Seed: t.Storm.Seed}
	if !quiet {
		t.Progress = stderr
	}
	rep, err := conform.Check(ctx, t)
	if errors.Is(err, conform.ErrUsage) {
		return usage(strings.TrimPrefix(err.Error(), conform.ErrUsage.Error()+": "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "conform: %v\n", err)
		return exitFail
	}
	if jsonOut {
		if err := rep.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "conform: %v\n", err)
			return exitFail
		}
	} else {
		rep.WriteTable(stdout)
	}
	if outDir != "" {
		if err := write(outDir, rep); err != nil {
			fmt.Fprintf(stderr, "conform: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(stderr, "conform: reports in %s\n", outDir)
	}
	if !rep.OK {
		return exitFail
	}
	return exitOK
}

// write writes the report files into dir.
func write(dir string, rep *conform.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"report.json", rep.WriteJSON},
		{"junit.xml", rep.WriteJUnit},
		{"report.html", rep.WriteHTML},
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	hist := filepath.Join(dir, "history.html")
	_ = os.Remove(hist)
	var b bytes.Buffer
	if failing, err := rep.WriteHistoryHTML(&b); err != nil || !failing {
		return err
	}
	return os.WriteFile(hist, b.Bytes(), 0o644)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %q: %w", path, err)
	}
	return f.Close()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
