package record_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// TestReadTruncatedRecord: a record cut short is an error naming its line,
// wherever it is, unless it is the last line and lacks its newline (the
// writer was killed mid-write): then it is reported as PartialTail.
func TestReadTruncatedRecord(t *testing.T) {
	t.Parallel()
	const rec = `{"kind":"attempt","ts":1700000000100,"merchant":"m","key":"k","amount":100,"n":1,"status":202,"class":"ok"}`
	full := `{"level":"info","msg":` + quote(rec) + `,"source":"console"}`
	logfmt := `time="2025-11-21T08:00:00Z" level=info msg=` + quote(rec) + ` source=console`
	cut := func(line string) string { return line[:len(line)*2/3] }
	tests := []struct {
		name     string
		input    string
		wantLine int // 0: no error
		attempts int
		partial  bool
	}{
		{"json line truncated in the middle", full + "\n" + cut(full) + "\n" + full + "\n", 2, 0, false},
		{"logfmt line truncated in the middle", logfmt + "\n" + cut(logfmt) + "\n" + logfmt + "\n", 2, 0, false},
		{"a bare record, not in a log format Read takes", rec + "\n", 1, 0, false},
		{"a truncated last line with its newline", full + "\n" + cut(full) + "\n", 2, 0, false},
		{"a message cut inside its record", `{"level":"info","msg":"{\"kind\":\"attempt\",\"ts\":17"}` + "\n", 1, 0, false},
		{"a killed writer's last line", full + "\n" + logfmt + "\n" + cut(full), 0, 2, true},
		{"a complete last line without its newline", full + "\n" + full, 0, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := record.Read(strings.NewReader(tt.input))
			if tt.wantLine > 0 {
				if !errors.Is(err, record.ErrBadRecord) || !strings.Contains(err.Error(), fmt.Sprintf("line %d:", tt.wantLine)) {
					t.Fatalf("Read: error %v, want ErrBadRecord naming line %d", err, tt.wantLine)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if len(got.Attempts) != tt.attempts || got.PartialTail != tt.partial || got.Other != 0 {
				t.Errorf("Read = %d attempts, partial tail %v, %d other; want %d, %v, 0", len(got.Attempts), got.PartialTail, got.Other, tt.attempts, tt.partial)
			}
		})
	}
}

func TestReadFileNamesFileAndLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "records.log")
	if err := os.WriteFile(path, []byte(`msg="{\"kind\":\"attempt\",\"ts\":1`+"\nmore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := record.ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), path+": line 1:") {
		t.Errorf("ReadFile: %v, want an error naming %s and line 1", err, path)
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
