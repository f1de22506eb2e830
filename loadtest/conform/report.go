package conform

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anishathalye/porcupine"
)

// WriteTable writes the matrix as a terminal table, then the storm's line
// and the verdict.
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\t§\tLEVEL\tRESULT\tDETAIL")
	for _, row := range r.Rows {
		res := string(row.Result)
		if row.Result == Fail {
			res = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", row.ID, row.Section, row.Level, res, row.Detail)
	}
	tw.Flush()
	if s := r.Storm; s != nil {
		fmt.Fprintf(w, "\nstorm: %d keys x %d clients, %d attempts in %s (%d gave up), statuses %v", s.Keys, s.Clients, s.Attempts, s.Took.Round(time.Millisecond), s.GaveUp, s.Statuses)
		if s.Effects != nil {
			fmt.Fprintf(w, ", effects per key %v", s.Effects)
		}
		fmt.Fprintf(w, "; %d faults\nhistory: %s, %d operations checked in %s\n", len(s.Faults), s.Verdict.Result, s.Verdict.Operations, s.Verdict.Took.Round(time.Millisecond))
	}
	verdict := "PASS: every applicable MUST and SHOULD rule holds"
	if !r.OK {
		verdict = fmt.Sprintf("FAIL: %d MUST/SHOULD rule(s) broken", len(r.Failed()))
	}
	fmt.Fprintf(w, "%s (%s, %s)\n", verdict, r.Target, r.Took.Round(time.Millisecond))
}

// WriteJSON writes the report as indented JSON (evidence included).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes one test case per row: failing MUST/SHOULD rows are
// failures, n/a rows are skipped, profile rows that fail pass with the
// detail in system-out.
func (r *Report) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: "conform " + r.Target, Tests: len(r.Rows), Time: r.Took.Seconds()}
	for _, row := range r.Rows {
		c := junitCase{Name: fmt.Sprintf("%s (%s §%s)", row.ID, row.Level, row.Section), Classname: "conform", SystemOut: row.Rule + ": " + row.Detail}
		var ev []string
		for _, ex := range row.Evidence {
			ev = append(ev, ex.String())
		}
		switch {
		case row.Failed():
			s.Failures++
			c.Failure = &junitFailure{Message: row.Detail, Text: strings.Join(ev, "\n")}
		case row.Result == NA:
			s.Skipped++
			c.Skipped = &junitSkipped{Message: row.Detail}
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	return enc.Encode(s)
}

// WriteHistoryHTML writes porcupine's visualization of the failing keys'
// histories. It reports false, writing nothing, when no key failed.
func (r *Report) WriteHistoryHTML(w io.Writer) (bool, error) {
	if r.Storm == nil || len(r.Storm.Verdict.failing) == 0 {
		return false, nil
	}
	m := idemModel()
	_, info := porcupine.CheckOperationsVerbose(m, r.Storm.Verdict.failing, time.Minute)
	return true, porcupine.Visualize(m, info, w)
}
