package envconf_test

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/pkg/service/envconf"
)

func envOf(m map[string]string) func(string) string {
	return func(name string) string { return m[name] }
}

// values is one of everything a Parser reads, so a table row states all of
// them at once.
type values struct {
	Str      string
	Duration time.Duration
	Positive int
	Int64    int64
	Float64  float64
	Bool     bool
	Level    slog.Level
}

func read(p *envconf.Parser) values {
	return values{
		Str:      p.String("STR", "def"),
		Duration: p.Duration("DURATION", 15*time.Second),
		Positive: p.Positive("POSITIVE", 16),
		Int64:    p.Int64("INT64", -7),
		Float64:  p.Float64("FLOAT64", 0.5),
		Bool:     p.Bool("BOOL", true),
		Level:    p.Level("LEVEL", slog.LevelInfo),
	}
}

var defaults = values{Str: "def", Duration: 15 * time.Second, Positive: 16, Int64: -7, Float64: 0.5, Bool: true, Level: slog.LevelInfo}

func TestParserReads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want values
	}{
		{name: "unset takes the defaults", env: nil, want: defaults},
		{
			name: "blank takes the defaults",
			env: map[string]string{"STR": " ", "DURATION": "", "POSITIVE": "\t", "INT64": "", "FLOAT64": " ",
				"BOOL": "", "LEVEL": " "},
			want: defaults,
		},
		{
			name: "good values",
			env: map[string]string{"STR": "  x y ", "DURATION": "250ms", "POSITIVE": "3", "INT64": "-9223372036854775808",
				"FLOAT64": "1e-3", "BOOL": "false", "LEVEL": "DEBUG"},
			want: values{Str: "x y", Duration: 250 * time.Millisecond, Positive: 3, Int64: -9223372036854775808,
				Float64: 0.001, Bool: false, Level: slog.LevelDebug},
		},
		{
			name: "zero and negative values that parse",
			env:  map[string]string{"DURATION": "-1s", "INT64": "0", "FLOAT64": "-2", "BOOL": "0", "LEVEL": "warn+2"},
			want: values{Str: "def", Duration: -time.Second, Positive: 16, Int64: 0, Float64: -2, Bool: false,
				Level: slog.LevelWarn + 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := envconf.New(envOf(tt.env))
			got := read(p)
			if err := p.Err(); err != nil {
				t.Fatalf("Err() = %v, want nil", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

// Every bad value is reported, in the order read, and each one that fails
// keeps its default so the caller can go on reading.
func TestParserReportsEveryProblem(t *testing.T) {
	t.Parallel()
	p := envconf.New(envOf(map[string]string{
		"STR": "anything", "DURATION": "soon", "POSITIVE": "0", "INT64": "0x10", "FLOAT64": "often",
		"BOOL": "maybe", "LEVEL": "loud",
	}))
	got := read(p)
	want := defaults
	want.Str = "anything"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	err := p.Err()
	if err == nil {
		t.Fatal("Err() = nil, want every problem")
	}
	wantMsg := strings.Join([]string{
		`configuration: DURATION "soon" is not a duration like 500ms or 15s`,
		`POSITIVE "0" is not a positive integer`,
		`INT64 "0x10" is not a 64-bit integer`,
		`FLOAT64 "often" is not a number`,
		`BOOL "maybe" is not a boolean (true/false)`,
		`LEVEL "loud" is not a level (debug, info, warn, error)`,
	}, "\n")
	if diff := cmp.Diff(wantMsg, err.Error()); diff != "" {
		t.Errorf("Err() (-want +got):\n%s", diff)
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 6 {
		t.Fatalf("Err() does not unwrap to the 6 problems: %#v", err)
	}
	problems := p.Problems()
	for i, e := range joined.Unwrap() {
		if pr, ok := e.(envconf.Problem); !ok || pr != problems[i] {
			t.Errorf("Err() problem %d = %#v, want Problems()[%d] = %#v", i, e, i, problems[i])
		}
	}
	for _, name := range []string{"DURATION", "POSITIVE", "INT64", "FLOAT64", "BOOL", "LEVEL"} {
		if !p.Failed(name) {
			t.Errorf("Failed(%q) = false, want true", name)
		}
	}
	if p.Failed("STR") {
		t.Error(`Failed("STR") = true, want false`)
	}
}

func TestParserFail(t *testing.T) {
	t.Parallel()
	p := envconf.New(envOf(nil))
	if p.Failed("PORT") || p.Err() != nil {
		t.Fatalf("new Parser: Failed = %v, Err = %v; want false, nil", p.Failed("PORT"), p.Err())
	}
	p.Fail("PORT", "must not be empty")
	p.Fail("URL", "is required")
	if !p.Failed("PORT") || !p.Failed("URL") {
		t.Errorf("Failed(PORT), Failed(URL) = %v, %v; want true, true", p.Failed("PORT"), p.Failed("URL"))
	}
	want := "configuration: PORT must not be empty\nURL is required"
	err := p.Err()
	if err == nil || err.Error() != want {
		t.Errorf("Err() = %v, want %q", err, want)
	}
	var first envconf.Problem
	if !errors.As(err, &first) || first != (envconf.Problem{Name: "PORT", Msg: "must not be empty"}) {
		t.Errorf("errors.As(Err(), *Problem) = %v, %+v; want true and the PORT problem", errors.As(err, &first), first)
	}
}

func TestParserProblems(t *testing.T) {
	t.Parallel()
	p := envconf.New(envOf(map[string]string{"WORKERS": "none"}))
	if got := p.Problems(); got != nil {
		t.Fatalf("new Parser: Problems() = %v, want nil", got)
	}
	p.Positive("WORKERS", 8)
	p.Fail("PORT", "must not be empty")
	got := p.Problems()
	want := []envconf.Problem{
		{Name: "WORKERS", Msg: `"none" is not a positive integer`},
		{Name: "PORT", Msg: "must not be empty"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Problems() (-want +got):\n%s", diff)
	}
	got[0].Msg = "changed"
	if diff := cmp.Diff(want, p.Problems()); diff != "" {
		t.Errorf("Problems() after changing its result (-want +got):\n%s", diff)
	}
}

// port is a type of the caller's own, read through Parse.
type port uint16

func parsePort(v string) (port, error) {
	n, err := strconv.ParseUint(v, 10, 16)
	return port(n), err
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    port
		problem []envconf.Problem
	}{
		{name: "unset takes the default", env: nil, want: 8080},
		{name: "blank takes the default", env: map[string]string{"PORT": " \t"}, want: 8080},
		{name: "trimmed value", env: map[string]string{"PORT": " 443 "}, want: 443},
		{
			name:    "bad value keeps the default, in the caller's words",
			env:     map[string]string{"PORT": " 65536 "},
			want:    8080,
			problem: []envconf.Problem{{Name: "PORT", Msg: `"65536" is not a port number (0-65535)`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := envconf.New(envOf(tt.env))
			if got := envconf.Parse(p, "PORT", 8080, parsePort, "a port number (0-65535)"); got != tt.want {
				t.Errorf("Parse() = %d, want %d", got, tt.want)
			}
			if diff := cmp.Diff(tt.problem, p.Problems()); diff != "" {
				t.Errorf("Problems() (-want +got):\n%s", diff)
			}
		})
	}
}
