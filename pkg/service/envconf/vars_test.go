package envconf_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/pkg/service/envconf"
)

// Vars lists every variable read, through every method, once each, with its
// default as a person writes it, whatever the environment holds.
func TestParserVars(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{nil, {"STR": "x", "DURATION": "soon", "REQUIRED": "set", "LIST": "1s"}} {
		p := envconf.New(envOf(env))
		read(p)
		p.Required("REQUIRED")
		envconf.Lookup(p, "LIST", []time.Duration{time.Second, 5 * time.Minute, 24 * time.Hour})
		envconf.Parse(p, "PORT", port(8080), parsePort, "a port number")
		p.String("EMPTY", "")
		p.Duration("DURATION", time.Hour) // read again: the first default stays
		p.String("HOST", "h-1")
		p.DescribeDefault("HOST", "the host name")

		want := []envconf.Var{
			{Name: "STR", Default: "def"},
			{Name: "DURATION", Default: "15s"},
			{Name: "POSITIVE", Default: "16"},
			{Name: "INT64", Default: "-7"},
			{Name: "FLOAT64", Default: "0.5"},
			{Name: "BOOL", Default: "true"},
			{Name: "LEVEL", Default: "info"},
			{Name: "REQUIRED", Required: true},
			{Name: "LIST", Default: "1s,5m,24h"},
			{Name: "PORT", Default: "8080"},
			{Name: "EMPTY"},
			{Name: "HOST", Default: "the host name"},
		}
		if diff := cmp.Diff(want, p.Vars()); diff != "" {
			t.Errorf("env %v: Vars() (-want +got):\n%s", env, diff)
		}
	}
}

func TestVarsDurations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{500 * time.Millisecond, "500ms"},
		{10 * time.Second, "10s"},
		{90 * time.Second, "1m30s"},
		{5 * time.Minute, "5m"},
		{90 * time.Minute, "1h30m"},
		{24 * time.Hour, "24h"},
		{time.Hour + time.Second, "1h0m1s"},
		{1500 * time.Microsecond, "1.5ms"},
	}
	for _, tt := range tests {
		p := envconf.New(envOf(nil))
		p.Duration("D", tt.d)
		if got := p.Vars()[0].Default; got != tt.want {
			t.Errorf("default %v written %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestVarsLevels(t *testing.T) {
	t.Parallel()
	p := envconf.New(envOf(nil))
	p.Level("A", slog.LevelWarn+2)
	p.Level("B", slog.LevelError)
	want := []envconf.Var{{Name: "A", Default: "warn+2"}, {Name: "B", Default: "error"}}
	if diff := cmp.Diff(want, p.Vars()); diff != "" {
		t.Errorf("Vars() (-want +got):\n%s", diff)
	}
}

// Required returns the value and leaves the report of an unset one to the
// caller, in its own words.
func TestParserRequired(t *testing.T) {
	t.Parallel()
	p := envconf.New(envOf(map[string]string{"SET": " v "}))
	if got := p.Required("SET"); got != "v" {
		t.Errorf(`Required("SET") = %q, want "v"`, got)
	}
	if got := p.Required("UNSET"); got != "" {
		t.Errorf(`Required("UNSET") = %q, want ""`, got)
	}
	if got := p.Problems(); got != nil {
		t.Errorf("Problems() = %v, want nil", got)
	}
}
