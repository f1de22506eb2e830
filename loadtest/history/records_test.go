package history

import (
	"errors"
	"testing"

	"github.com/oncepay/oncepay/loadtest/record"
)

func TestFromRecords(t *testing.T) {
	t.Parallel()
	const ts = 1700000000000
	attempts := []record.Attempt{
		{TS: ts, End: ts + 40, Merchant: "m", Key: "k", Fingerprint: fp1, Amount: 100, VU: 3, Class: record.ClassCutOff},
		{TS: ts + 50, End: ts + 60, Merchant: "m", Key: "k", Fingerprint: fp1, Amount: 100, VU: 3, Status: 202,
			Class: record.ClassOK, PaymentID: "pay_1", BodySHA256: "b1", Replayed: true},
		{TS: ts + 10, DurationMS: 5, Merchant: "m", Key: "k", Fingerprint: fp1, Amount: 100, VU: 7, Copy: 2, Status: 409, Class: record.ClassConflict},
		{TS: ts, End: ts + 1, Merchant: "m", Key: "a", Fingerprint: fp2, Amount: 100, VU: 1, Status: 503, Class: record.ClassUnavailable},
	}
	finals := map[string]Input{"m:k": row("pay_1", fp1, "b1", "succeeded", charged)}
	parts, err := FromRecords(attempts, finals)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].Key != "m:a" || parts[1].Key != "m:k" {
		t.Fatalf("partitions %+v, want m:a then m:k", parts)
	}
	k := parts[1]
	if got := []Answer{k.Ops[0].Out.Answer, k.Ops[1].Out.Answer, k.Ops[2].Out.Answer}; got[0] != AnswerAmbiguous || got[1] != AnswerOK || got[2] != AnswerBusy {
		t.Errorf("answers %v", got)
	}
	if c := k.Ops[2].Client; c != "vu7.2" {
		t.Errorf("client of a batch copy = %q, want vu7.2", c)
	}
	if d := k.Ops[2].End.Sub(k.Ops[2].Start); d.Milliseconds() != 5 {
		t.Errorf("a record without an end time lasts %s, want its duration 5ms", d)
	}
	if !parts[0].Final.Final || parts[0].Final.Row != nil || !k.Final.Final || k.Final.Row == nil {
		t.Errorf("final reads %+v %+v", parts[0].Final, k.Final)
	}
	if r := Check(parts, Config{}); r.Verdict != VerdictOK || r.Ambiguous != 2 || r.Concurrent != 1 {
		t.Errorf("Check = %+v, want ok with 2 ambiguous attempts and 1 concurrent key", r)
	}
	attempts[0].Fingerprint = ""
	if _, err := FromRecords(attempts, finals); !errors.Is(err, ErrNoFingerprint) {
		t.Errorf("FromRecords without a fingerprint: %v, want ErrNoFingerprint", err)
	}
}
