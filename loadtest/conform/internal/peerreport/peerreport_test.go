package peerreport

import (
	"testing"

	"github.com/oncepay/oncepay/loadtest/conform"
)

func TestLine(t *testing.T) {
	rep := &conform.Report{
		Rows: []conform.Row{
			{ID: "key-required", Level: conform.SHOULD, Result: conform.Fail, Detail: "answered 201 without a key"},
			{ID: "key-empty", Level: conform.SHOULD, Result: conform.Fail, Detail: "answered 201 for a malformed key, want 400"},
			{ID: "key-too-long", Level: conform.SHOULD, Result: conform.Pass},
			{ID: "key-not-ascii", Level: conform.SHOULD, Result: conform.Fail, Detail: "answered 201 for a malformed key, want 400"},
			{ID: "scope", Level: conform.SHOULD, Result: conform.NA},
			{ID: "history", Level: conform.MUST, Result: conform.Fail, Detail: "Illegal: 5 of 20 keys have no legal order: another payload got the same 2xx answer (5 keys)"},
			{ID: "problem-json", Level: conform.Profile, Result: conform.Fail, Detail: `a 400 answer is "text/plain | x"`},
		},
		Storm: &conform.StormReport{Verdict: conform.Verdict{Diagnosis: map[string]int{"two payloads got different 2xx answers": 2, "another payload got the same 2xx answer": 5}}},
	}
	got := Line("Fiber `x`", rep)
	want := "Fiber `x`\t1\t5\t" +
		"`key-required` (SHOULD): answered 201 without a key · " +
		"`key-empty`, `key-not-ascii` (SHOULD): answered 201 for a malformed key, want 400 · " +
		"`history` (MUST): no legal order: another payload got the same 2xx answer; two payloads got different 2xx answers · " +
		"`problem-json` (profile): a 400 answer is \"text/plain \\| x\""
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
