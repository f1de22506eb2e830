package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/bench/results"
)

func TestParseCommandStats(t *testing.T) {
	t.Parallel()
	raw := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=4000,usec=9000,usec_per_call=2.25,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hmget:calls=4000,usec=100,usec_per_call=0.03,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hello:calls=2,usec=10,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=1,usec=10,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|resetstat:calls=1,usec=10,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n"
	got := parseCommandStats(raw, map[string]bool{"hmget": true})
	if got.Total != 4002 {
		t.Errorf("Total = %d, want 4002 (evalsha + hello; hmget runs inside the scripts; info and resetstat are bench's own)", got.Total)
	}
	if diff := cmp.Diff(map[string]int{"evalsha": 4000, "hello": 2}, got.ByCommand); diff != "" {
		t.Errorf("ByCommand (-want +got):\n%s", diff)
	}
	got.Requests = 2000
	if got.PerRequest() != 2.001 || got.PerRequestWork() != 2 {
		t.Errorf("PerRequest = %v, PerRequestWork = %v; want 2.001 and 2", got.PerRequest(), got.PerRequestWork())
	}
}

func TestScriptCommands(t *testing.T) {
	t.Parallel()
	got := scriptCommands()
	for _, name := range []string{"time", "hmget", "hset", "pexpire", "hdel"} {
		if !got[name] {
			t.Errorf("the boundary's scripts call %s, scriptCommands did not find it: %v", name, got)
		}
	}
	if got["evalsha"] {
		t.Error("evalsha is a round trip, not a command the scripts call")
	}
}

func TestNextRate(t *testing.T) {
	t.Parallel()
	run := func(rate float64, ok bool) results.Sustained { return results.Sustained{Rate: rate, OK: ok} }
	tests := []struct {
		name string
		runs []results.Sustained
		want float64
	}{
		{"held: 15% up", []results.Sustained{run(400, true)}, 460},
		{"held twice: up again", []results.Sustained{run(400, true), run(460, true)}, 530},
		{"failed: 15% down", []results.Sustained{run(400, false)}, 340},
		{"failed above a held rate: halfway", []results.Sustained{run(400, true), run(460, false)}, 430},
		{"held below a failed rate: halfway", []results.Sustained{run(400, false), run(340, true)}, 370},
		{"halfway held: halfway again", []results.Sustained{run(400, false), run(340, true), run(370, true)}, 390},
		{"10/s apart: stop", []results.Sustained{run(400, false), run(340, true), run(390, true)}, 0},
		{"neighbours: stop", []results.Sustained{run(400, true), run(410, false)}, 0},
		{"failed at the bottom: stop", []results.Sustained{run(20, false)}, 0},
	}
	for _, tt := range tests {
		if got := nextRate(tt.runs); got != tt.want {
			t.Errorf("%s: nextRate = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWithDB(t *testing.T) {
	t.Parallel()
	got := withDB("postgres://oncepay:oncepay@127.0.0.1:5442/oncepay?sslmode=disable", "bench")
	if want := "postgres://oncepay:oncepay@127.0.0.1:5442/bench?sslmode=disable"; got != want {
		t.Errorf("withDB = %q, want %q", got, want)
	}
}

func TestAutovacuumedSince(t *testing.T) {
	t.Parallel()
	before := map[string]int{"bench.payments": 2, "bench.outbox": 1, "benchpsp.psp_calls": 0}
	after := map[string]int{"bench.payments": 3, "bench.outbox": 1, "benchpsp.psp_calls": 1, "bench.charge_takeovers": 0}
	got := autovacuumedSince(before, after)
	if diff := cmp.Diff([]string{"bench.payments", "benchpsp.psp_calls"}, got); diff != "" {
		t.Errorf("autovacuumedSince (-want +got):\n%s", diff)
	}
}
