package record_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/record"
)

func TestRead(t *testing.T) {
	t.Parallel()
	ok := record.Attempt{
		Kind: "attempt", TS: 1700000000123.5, Scenario: "steady", Merchant: "merchant_a", Key: "r1-steady-1",
		Amount: 1234, N: 2, Target: "127.0.0.1:8082", Status: 202, Class: record.ClassOK,
		PaymentID: "pay_1", BodySHA256: "ab12", Replayed: true, DurationMS: 12.5, Final: true, Outcome: record.OutcomeOK,
	}
	cut := record.Attempt{
		Kind: "attempt", TS: 1700000000100, Scenario: "steady", Merchant: "merchant_a", Key: "r1-steady-1",
		Amount: 1234, N: 1, Target: "127.0.0.1:8080", Class: record.ClassCutOff, ErrorCode: 1000, Error: "EOF", DurationMS: 3,
	}
	const okJSON = `{"kind":"attempt","ts":1700000000123.5,"scenario":"steady","merchant":"merchant_a","key":"r1-steady-1","amount":1234,"n":2,"target":"127.0.0.1:8082","status":202,"class":"ok","id":"pay_1","body_sha256":"ab12","replayed":true,"duration_ms":12.5,"final":true,"outcome":"ok"}`
	const cutJSON = `{"kind":"attempt","ts":1700000000100,"scenario":"steady","merchant":"merchant_a","key":"r1-steady-1","amount":1234,"n":1,"target":"127.0.0.1:8080","status":0,"class":"cut_off","error_code":1000,"error":"EOF","duration_ms":3}`
	tests := []struct {
		name  string
		input string
		want  record.Log
	}{
		{
			name: "json log format",
			input: `{"level":"info","msg":` + quote(okJSON) + `,"source":"console","time":"2025-11-21T08:00:00Z"}` + "\n" +
				`{"level":"warning","msg":"something else","source":"console","time":"2025-11-21T08:00:00Z"}` + "\n" +
				`{"level":"info","msg":` + quote(cutJSON) + `,"source":"console","time":"2025-11-21T08:00:01Z"}` + "\n",
			want: record.Log{Attempts: []record.Attempt{ok, cut}, Other: 1},
		},
		{
			name: "logfmt log format",
			input: `time="2025-11-21T08:00:00Z" level=info msg=` + quote(okJSON) + ` source=console` + "\n" +
				`time="2025-11-21T08:00:00Z" level=info msg=hello source=console` + "\n" +
				`msg=` + quote(cutJSON) + "\n",
			want: record.Log{Attempts: []record.Attempt{ok, cut}, Other: 1},
		},
		{
			name:  "blank and foreign lines",
			input: "\n\nnot a log line\n{\"no_msg\":1}\n",
			want:  record.Log{Other: 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := record.Read(strings.NewReader(tt.input))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Read mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadBadRecord(t *testing.T) {
	t.Parallel()
	input := "msg=\"x\"\n" + `{"level":"info","msg":"{\"kind\":\"attempt\",\"amount\":\"lots\"}"}` + "\n"
	_, err := record.Read(strings.NewReader(input))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("Read: got error %v, want one naming line 2", err)
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
