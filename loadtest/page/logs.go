package page

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// LogLine is one JSON log line of a service (log/slog's JSON handler) that
// names an idempotency key.
type LogLine struct {
	Time     time.Time `json:"time"`
	Level    string    `json:"level"`
	Msg      string    `json:"msg"`
	Service  string    `json:"service"`
	Instance string    `json:"instance"`
	// The api logs "merchant", the worker "merchant_id".
	Merchant   string `json:"merchant"`
	MerchantID string `json:"merchant_id"`
	Key        string `json:"idempotency_key"`
	PaymentID  string `json:"payment_id"`
	// Status is the api's HTTP status (a number) or the worker's payment
	// status (a string).
	Status     any     `json:"status"`
	DurationMS float64 `json:"duration_ms"`
	Replayed   string  `json:"replayed"`
	// The worker's handler lines.
	Attempt      int    `json:"attempt"`
	Redelivered  bool   `json:"redelivered"`
	ClaimAttempt int    `json:"claim_attempt"`
	PSPChargeID  string `json:"psp_charge_id"`
	Err          string `json:"err"`
	Cause        string `json:"cause"`
	Outcome      string `json:"outcome"`
}

// merchant is the line's merchant, whichever field the service used.
func (l LogLine) merchant() string {
	if l.Merchant != "" {
		return l.Merchant
	}
	return l.MerchantID
}

// ReadLogs reads the JSON log lines of the files matching the glob patterns
// whose idempotency key belongs to the run (starts with "<runID>-"), in
// time order. Lines that are not JSON, or name no key, are skipped; a
// pattern matching nothing reads nothing.
func ReadLogs(patterns []string, runID string) ([]LogLine, error) {
	var out []LogLine
	for _, pat := range patterns {
		files, err := filepath.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("log pattern %q: %w", pat, err)
		}
		for _, f := range files {
			lines, err := readLog(f, runID+"-")
			if err != nil {
				return nil, err
			}
			out = append(out, lines...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

func readLog(path, prefix string) ([]LogLine, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []LogLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	needle := []byte(`"idempotency_key":"` + prefix)
	for sc.Scan() {
		b := sc.Bytes()
		if !bytes.Contains(b, needle) {
			continue
		}
		var l LogLine
		if json.Unmarshal(b, &l) != nil || !strings.HasPrefix(l.Key, prefix) {
			continue
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
