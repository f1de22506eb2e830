package conform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/loadtest/conform"
)

// The outputs of a target with one broken MUST rule (the race): JUnit has
// one failure per failing MUST/SHOULD row and skips n/a rows, the JSON
// round-trips, the page and history.html show the failing key.
func TestReportOutputs(t *testing.T) {
	s, srv := newRefServer(t, race)
	tgt := s.target(srv)
	tgt.ExpiryDoc = ""
	rep, err := conform.Check(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}

	var junit bytes.Buffer
	if err := rep.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Cases    []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &suite); err != nil {
		t.Fatalf("junit: %v\n%s", err, junit.String())
	}
	var failed []string
	for _, c := range suite.Cases {
		if c.Failure != nil {
			failed = append(failed, c.Name)
		}
	}
	if got, want := strings.Join(failed, ","), "concurrent (MUST §2.6),history (MUST §2.6)"; got != want {
		t.Errorf("junit failures %q, want %q", got, want)
	}
	if suite.Tests != len(rep.Rows) || suite.Failures != 2 || suite.Skipped != 2 {
		t.Errorf("junit tests/failures/skipped = %d/%d/%d, want %d/2/2 (expiry, retry-after n/a)", suite.Tests, suite.Failures, suite.Skipped, len(rep.Rows))
	}

	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back conform.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.OK || len(back.Rows) != len(rep.Rows) || back.Storm == nil || len(back.Storm.Verdict.FailingKeys) == 0 {
		t.Errorf("JSON round trip lost the verdict: ok %v, %d rows, storm %v", back.OK, len(back.Rows), back.Storm)
	}

	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FAIL: 2 MUST/SHOULD", "<svg", "concurrent", back.Storm.Verdict.FailingKeys[0]} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	var hist bytes.Buffer
	failing, err := rep.WriteHistoryHTML(&hist)
	if err != nil || !failing || !strings.Contains(hist.String(), "<html") {
		t.Errorf("history.html: failing %v, err %v, %d bytes", failing, err, hist.Len())
	}
}
