package compare

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// header returns the table's column titles; "other violations" only when a
// row has some, "postgres" only when a Postgres row is there.
func header(rows []Row) ([]string, []Column) {
	cols := []Column{DoubleCharges, PaymentsLost, MismatchedReplays, StuckRecords}
	for _, r := range rows {
		if r.Counts[Other] > 0 {
			cols = append(cols, Other)
			break
		}
	}
	titles := []string{"strategy", "boundary", "psp key"}
	if postgresColumn(rows) {
		titles = append(titles, "postgres")
	}
	for _, c := range cols {
		titles = append(titles, string(c))
	}
	return append(titles, "accepted/s", "p99", "histories (7)", "verdict"), cols
}

// postgresColumn reports whether rows hold a Postgres row.
func postgresColumn(rows []Row) bool {
	for _, r := range rows {
		if r.Postgres != "" {
			return true
		}
	}
	return false
}

// cells returns r's cells; pg says whether the table has the postgres
// column, where a strategy's row reads "runtime's".
func cells(r Row, cols []Column, pg bool) []string {
	boundary, key := variables(r.Strategy)
	out := []string{r.Strategy, boundary, key}
	if pg {
		out = append(out, cmp.Or(r.Postgres, "runtime's"))
	}
	for _, c := range cols {
		out = append(out, fmt.Sprint(r.Counts[c]))
	}
	return append(out, fmt.Sprintf("%.1f", r.AcceptedPerSecond), r.P99.Round(time.Millisecond).String(), r.Histories, r.Verdict())
}

// WriteText writes rows as an aligned plain-text table.
func WriteText(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	titles, cols := header(rows)
	fmt.Fprintln(tw, strings.Join(titles, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(cells(r, cols, postgresColumn(rows)), "\t"))
	}
	return tw.Flush()
}

// WriteMarkdown writes rows as a Markdown table, numbers right-aligned.
func WriteMarkdown(w io.Writer, rows []Row) error {
	titles, cols := header(rows)
	var b strings.Builder
	b.WriteString("| " + strings.Join(titles, " | ") + " |\n|")
	text := 3 // the leading text columns
	if postgresColumn(rows) {
		text++
	}
	for i := range titles {
		if i < text || i == len(titles)-1 {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		c := cells(r, cols, postgresColumn(rows))
		c[0] = "`" + c[0] + "`"
		b.WriteString("| " + strings.Join(c, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDetails writes, per strategy, what the verifier found by kind and
// whether the faults landed, as Markdown list items.
func WriteDetails(w io.Writer, rows []Row) error {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "- `%s` (run %s): %s; %d accepted, %d gave up; faults landed: %d requests cut off, %d lease takeovers\n",
			r.Strategy, r.RunID, r.KindsText(), r.Accepted, r.GaveUp, r.CutOff, r.Takeovers)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
