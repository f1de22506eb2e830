// Package peerreport runs conform against a third-party idempotency
// implementation mounted on a tiny app (the peers under
// loadtest/conform/testdata/peers) and writes its line of the third-party
// table in docs/conform.md.
//
// The line must read the same on every run of the same implementation, so
// it holds only what does not depend on timing: the rows' verdicts, their
// details, and for the history row the reasons without counts (how many
// keys lost a race varies).
package peerreport

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/loadtest/conform"
)

// Storm returns the storm every peer gets: conform's defaults with one key
// in flight at a time, so each key's clients arrive together and a race
// between them is met on every run, not on some.
func Storm() conform.Storm { return conform.Storm{Parallel: 1} }

// RedisLatency is added to every call a peer makes to Redis, as if Redis
// were across a network rather than on the loopback. Without it, whether a
// middleware that reads and then writes its key (not one atomic step) lets
// two duplicates through depends on the machine's timing; with it, every
// run of the same implementation reports the same rows.
const RedisLatency = 50 * time.Millisecond

// OutEnv names the directory the line is appended to (file lines.tsv);
// unset: the line is only logged.
const OutEnv = "CONFORM_PEERS_OUT"

// Run checks tgt and, with OutEnv set, appends name's line to
// $OutEnv/lines.tsv. It fails t only when conform cannot run, never on the
// implementation's rows: those are what the table reports.
func Run(t *testing.T, name string, tgt conform.Target) *conform.Report {
	t.Helper()
	rep, err := conform.Check(context.Background(), tgt)
	if err != nil {
		t.Fatalf("conform %s: %v", name, err)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	t.Log("\n" + b.String())
	line := Line(name, rep)
	t.Log(line)
	dir := os.Getenv(OutEnv)
	if dir == "" {
		return rep
	}
	f, err := os.OpenFile(filepath.Join(dir, "lines.tsv"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	return rep
}

// Line is rep's line of the table, tab-separated: name, rows passed, rows
// failed, and the failed rows as "`id`, `id` (LEVEL): detail" joined by
// " · " (rows with the same level and detail share one entry).
func Line(name string, rep *conform.Report) string {
	pass := 0
	type entry struct{ ids, level, detail string }
	var entries []entry
	at := map[string]int{}
	fails := 0
	for _, row := range rep.Rows {
		switch row.Result {
		case conform.Pass:
			pass++
			continue
		case conform.Fail:
			fails++
		default:
			continue
		}
		d := row.Detail
		if row.ID == "history" && rep.Storm != nil {
			d = "no legal order: " + strings.Join(rep.Storm.Verdict.Reasons(), "; ")
		}
		k := string(row.Level) + "\x00" + d
		if i, ok := at[k]; ok {
			entries[i].ids += ", `" + row.ID + "`"
			continue
		}
		at[k] = len(entries)
		entries = append(entries, entry{ids: "`" + row.ID + "`", level: string(row.Level), detail: d})
	}
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = fmt.Sprintf("%s (%s): %s", e.ids, e.level, e.detail)
	}
	cell := func(s string) string { return strings.NewReplacer("|", `\|`, "\t", " ", "\n", " ").Replace(s) }
	return strings.Join([]string{cell(name), fmt.Sprint(pass), fmt.Sprint(fails), cell(strings.Join(parts, " · "))}, "\t")
}

// ModuleVersion returns the version of module path in the current Go
// module's build list (go list -m), failing t when it cannot.
func ModuleVersion(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", path)
	cmd.Env = append(os.Environ(), "GOWORK=off") // the peers are outside go.work
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}
