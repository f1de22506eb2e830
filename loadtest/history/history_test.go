package history

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

const (
	fp1 = "f1f1f1f1f1f1"
	fp2 = "f2f2f2f2f2f2"
)

// attempt is one attempt of client c from a to b (ms) with payload fp.
func attempt(c string, a, b int, fp string, out Output) Op {
	return Op{Client: c, Start: ms(a), End: ms(b), In: Input{Fingerprint: fp, Amount: 100}, Out: out}
}

// withAmount is op with amount sent instead of 100.
func withAmount(op Op, amount int64) Op {
	op.In.Amount = amount
	return op
}

// amountRow is row with the stored amount set to amount.
func amountRow(in Input, amount int64) Input {
	r := *in.Row
	r.Amount = amount
	in.Row = &r
	return in
}

func ok(id, body string) Output {
	return Output{Answer: AnswerOK, Status: 202, PaymentID: id, BodySHA256: body}
}

func replay(id, body string) Output {
	o := ok(id, body)
	o.Replayed = true
	return o
}

var (
	busy      = Output{Answer: AnswerBusy, Status: 409}
	mismatch  = Output{Answer: AnswerMismatch, Status: 422}
	cutOff    = Output{Answer: AnswerAmbiguous}
	status503 = Output{Answer: AnswerAmbiguous, Status: 503}
	refused   = Output{Answer: AnswerNoEffect}
)

// row is the final read of a payment with fp, id and first answer body.
func row(id, fp, body, status string, charges ...Charge) Input {
	return Input{Final: true, Row: &Row{ID: id, Fingerprint: fp, Amount: 100, Status: status, ResponseSHA256: body}, Charges: charges}
}

var (
	noRow   = Input{Final: true}
	charged = Charge{ID: "ch_1", Amount: 100}
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ops   []Op
		final Input
		want  Verdict
	}{
		// histories that must fail
		{"two payment ids for one key", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
			attempt("b", 20, 30, fp1, replay("pay_2", "b2")),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictIllegal},
		{"two first successes for one key", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
			attempt("b", 5, 30, fp1, ok("pay_1", "b1")),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictIllegal},
		{"a replay with another body", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
			attempt("b", 20, 30, fp1, replay("pay_1", "b2")),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictIllegal},
		{"a 422 for the accepted payload after a loss (poisoned key)", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
			attempt("b", 20, 30, fp2, mismatch),
			attempt("a", 40, 50, fp1, mismatch),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictIllegal},
		{"a 422 on a key nothing can have accepted", []Op{
			attempt("a", 0, 10, fp1, mismatch),
		}, noRow, VerdictIllegal},
		{"a success for another payload", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
			attempt("b", 20, 30, fp2, replay("pay_1", "b1")),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictIllegal},
		{"an acknowledged payment missing from the database", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
		}, noRow, VerdictIllegal},
		{"the stored payload differs from the acknowledged one", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
		}, row("pay_1", fp2, "b1", "succeeded", charged), VerdictIllegal},
		{"two effective psp charges behind consistent answers", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
			attempt("b", 20, 30, fp1, replay("pay_1", "b1")),
		}, row("pay_1", fp1, "b1", "succeeded", charged, Charge{ID: "ch_2", Amount: 100}), VerdictIllegal},
		{"succeeded without a charge", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
		}, row("pay_1", fp1, "b1", "succeeded"), VerdictIllegal},
		{"a replay that ended before the first success began", []Op{
			attempt("b", 0, 10, fp1, replay("pay_1", "b1")),
			attempt("a", 20, 30, fp1, ok("pay_1", "b1")),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictIllegal},
		{"one ambiguous attempt for 100, a row and a charge of 999", []Op{
			attempt("a", 0, 10, fp1, cutOff),
		}, amountRow(row("pay_1", fp1, "b1", "succeeded", Charge{ID: "ch_1", Amount: 999}), 999), VerdictIllegal},
		{"a 2xx for 100, a row and a charge of 999", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
		}, amountRow(row("pay_1", fp1, "b1", "succeeded", Charge{ID: "ch_1", Amount: 999}), 999), VerdictIllegal},
		{"a replay of a payload sent with another amount", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
			withAmount(attempt("b", 20, 30, fp1, replay("pay_1", "b1")), 999),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictIllegal},
		{"a 422 after another payload's ambiguous attempt that took no effect", []Op{
			attempt("a", 0, 10, fp1, cutOff),
			attempt("b", 20, 30, fp2, mismatch),
		}, noRow, VerdictIllegal},
		{"a 422 after another payload's ambiguous attempt, then that payload's row", []Op{
			attempt("a", 0, 10, fp1, cutOff),
			attempt("b", 20, 30, fp2, mismatch),
			attempt("b", 40, 50, fp2, ok("pay_2", "b2")),
		}, row("pay_2", fp2, "b2", "succeeded", charged), VerdictIllegal},
		{"a payment row nobody can have created", []Op{
			attempt("a", 0, 10, fp1, refused),
		}, row("pay_1", fp1, "b1", "pending"), VerdictIllegal},

		// histories that must pass
		{"concurrent copies with 409s, cut-offs and replays", []Op{
			attempt("a", 0, 50, fp1, ok("pay_1", "b1")),
			attempt("b", 1, 20, fp1, busy),
			attempt("c", 0, 30, fp1, cutOff),
			attempt("c", 40, 60, fp1, replay("pay_1", "b1")),
			attempt("b", 25, 45, fp1, replay("pay_1", "b1")),
			attempt("d", 2, 3, fp1, status503),
			attempt("d", 10, 70, fp1, replay("pay_1", "b1")),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictOK},
		{"a cut-off attempt took effect, its retry replays", []Op{
			attempt("a", 0, 10, fp1, cutOff),
			attempt("a", 20, 30, fp1, replay("pay_1", "b1")),
		}, row("pay_1", fp1, "b1", "failed"), VerdictOK},
		{"a cut-off attempt took effect after the client gave up", []Op{
			attempt("a", 0, 10, fp1, cutOff),
			attempt("a", 20, 30, fp1, status503),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictOK},
		{"a cut-off attempt never took effect", []Op{
			attempt("a", 0, 10, fp1, cutOff),
		}, noRow, VerdictOK},
		{"a key reused with another payload, then the original's retry", []Op{
			attempt("a", 0, 10, fp1, ok("pay_1", "b1")),
			attempt("b", 20, 30, fp2, mismatch),
			attempt("a", 40, 50, fp1, replay("pay_1", "b1")),
		}, row("pay_1", fp1, "b1", "pending"), VerdictOK},
		{"a 422 after another payload's cut-off attempt", []Op{
			attempt("a", 0, 10, fp1, cutOff),
			attempt("b", 20, 30, fp2, mismatch),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictOK},
		{"an ambiguous attempt for 100 took effect: row and charge of 100", []Op{
			withAmount(attempt("a", 0, 10, fp1, cutOff), 100),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictOK},
		{"after an ambiguous attempt that took no effect, another payload succeeds", []Op{
			attempt("a", 0, 10, fp1, cutOff),
			attempt("b", 20, 30, fp2, busy),
			attempt("b", 40, 50, fp2, ok("pay_2", "b2")),
			attempt("a", 60, 70, fp1, mismatch),
		}, row("pay_2", fp2, "b2", "succeeded", charged), VerdictOK},
		{"the first payload's holder, still alive, loses to the taker-over", []Op{
			attempt("a", 0, 100, fp1, mismatch),
			attempt("b", 20, 30, fp2, ok("pay_2", "b2")),
		}, row("pay_2", fp2, "b2", "failed"), VerdictOK},
		{"a replay that overlaps the first success", []Op{
			attempt("b", 5, 20, fp1, replay("pay_1", "b1")),
			attempt("a", 0, 30, fp1, ok("pay_1", "b1")),
		}, row("pay_1", fp1, "b1", "succeeded", charged), VerdictOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Partition{Key: "merchant_a:k1", Ops: tt.ops, Final: tt.final}
			got := Check([]Partition{p}, Config{Start: t0})
			if got.Verdict != tt.want {
				t.Errorf("Check verdict = %s, want %s; operations:\n%s", got.Verdict, tt.want, strings.Join(describeOps(p, t0), "\n"))
			}
		})
	}
}

func TestCheckCountsAndReportsViolatingPartitionsOnly(t *testing.T) {
	t.Parallel()
	good := Partition{Key: "m:good", Ops: []Op{
		attempt("a", 0, 10, fp1, cutOff),
		attempt("b", 5, 30, fp1, ok("pay_1", "b1")),
	}, Final: row("pay_1", fp1, "b1", "succeeded", charged)}
	bad := Partition{Key: "m:bad", Ops: []Op{
		attempt("a", 0, 10, fp1, ok("pay_2", "b2")),
	}, Final: noRow}
	r := Check([]Partition{good, bad}, Config{Start: t0})
	if r.Verdict != VerdictIllegal || r.Partitions != 2 || r.Operations != 5 || r.Ambiguous != 1 || r.Concurrent != 1 {
		t.Errorf("Check = %+v, want illegal, 2 partitions, 5 operations, 1 ambiguous, 1 concurrent", r)
	}
	if len(r.Violations) != 1 || r.Violations[0].Key != "m:bad" {
		t.Fatalf("violations = %+v, want only m:bad", r.Violations)
	}
	want := []string{"t+0.000s..t+0.010s a: POST fp f1f1f1f1 amount 100 -> 202 pay_2 body b2", "final read of m:bad: no payment row, 0 charge(s)"}
	if got := r.Violations[0].Ops; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ops =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var html bytes.Buffer
	wrote, err := r.WriteHTML(&html, time.Second)
	if err != nil || !wrote {
		t.Fatalf("WriteHTML = %v, %v", wrote, err)
	}
	if !strings.Contains(html.String(), "m:bad") || strings.Contains(html.String(), "m:good") {
		t.Errorf("history.html does not show only the violating partition")
	}
}

// TestCheckTimeoutFails: a partition porcupine cannot decide in time is
// Unknown, and Unknown fails the check like Illegal.
func TestCheckTimeoutFails(t *testing.T) {
	t.Parallel()
	var ops []Op
	for i := range 40 { // 40 concurrent ambiguous attempts of different payloads
		ops = append(ops, attempt(fmt.Sprint("c", i), 0, 100, fmt.Sprint("fp", i), cutOff))
	}
	// a row none of them can have written: deciding that means trying every order
	p := Partition{Key: "m:k", Ops: ops, Final: row("pay_1", "fp-other", "b1", "pending")}
	r := Check([]Partition{p}, Config{Timeout: 50 * time.Millisecond, Start: t0})
	if r.Verdict != VerdictUnknown || len(r.Violations) != 1 || r.Violations[0].Verdict != VerdictUnknown {
		t.Errorf("Check = %s with %+v, want unknown, reported as a violation", r.Verdict, r.Violations)
	}
}
