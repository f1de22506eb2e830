package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/oncepay/oncepay/loadtest/compare"
	"github.com/oncepay/oncepay/loadtest/page"
)

// writePage writes report.html in cfg.Out: the strategies side by side,
// each linking its run's page, with the stories of the payments each one
// double-charged or lost.
func writePage(cfg config, rows []compare.Row) error {
	var runs []page.CompareRun
	for _, row := range rows {
		dir := filepath.Join(cfg.Out, row.Strategy)
		r, err := readReport(dir)
		if err != nil {
			return err
		}
		var hot []string
		for _, v := range r.Violations {
			if c := compare.ColumnOf(v.Kind); c == compare.DoubleCharges || c == compare.PaymentsLost {
				hot = append(hot, v.IDs...)
			}
		}
		p, err := page.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		facts := []page.Fact{}
		for _, c := range compare.Columns() {
			facts = append(facts, page.Fact{Label: string(c), Text: fmt.Sprint(row.Counts[c])})
		}
		facts = append(facts,
			page.Fact{Label: "accepted", Text: fmt.Sprintf("%d (%.1f/s)", row.Accepted, row.AcceptedPerSecond)},
			page.Fact{Label: "p99", Text: row.P99.Round(time.Millisecond).String()},
			page.Fact{Label: "histories", Text: row.Histories},
			page.Fact{Label: "faults landed", Text: fmt.Sprintf("%d cut off, %d takeovers", row.CutOff, row.Takeovers)})
		runs = append(runs, page.CompareRun{Name: row.Strategy, Pass: row.Pass, Verdict: row.Verdict(),
			Href: row.Strategy + "/report.html", Facts: facts, Page: p, Hot: hot})
	}
	id := fmt.Sprintf("%s at %d/s, seed %d", cfg.Duration, cfg.Rate, cfg.Seed)
	return page.WriteFile(filepath.Join(cfg.Out, "report.html"), page.BuildCompare(id, runs))
}
