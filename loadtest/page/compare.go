package page

import "fmt"

// CompareRun is one strategy's run of make compare.
type CompareRun struct {
	Name    string
	Pass    bool // no violation
	Verdict string
	// Href is its run's report.html, relative to the compare page.
	Href string
	// Facts are its row of the comparison table.
	Facts []Fact
	// Page is its run's page data (ReadFile); Hot are the ids (payment
	// ids or keys) that its double-charge and lost-payment violations
	// name: their stories go on the compare page.
	Page Data
	Hot  []string
}

// maxCompareStories caps the stories taken from each strategy's run.
const maxCompareStories = 100

// BuildCompare gathers make compare's page: the strategies side by side,
// and the stories of the payments each one double-charged or lost, taken
// from its run's page (at most maxCompareStories each, the rest counted
// as omitted). The ids of the stories on this page are
// "<strategy>/<merchant>:<key>".
func BuildCompare(runID string, runs []CompareRun) Data {
	d := Data{Kind: "compare", RunID: runID, Pass: true, Series: Series{}, Stories: []Story{}}
	failed := 0
	for _, run := range runs {
		s := Strategy{Name: run.Name, Pass: run.Pass, Verdict: run.Verdict, Href: run.Href, Facts: run.Facts, Stories: []string{}}
		if !run.Pass {
			failed++
		}
		hot := map[string]bool{}
		for _, id := range run.Hot {
			hot[id] = true
		}
		want := 0
		for _, st := range run.Page.Stories {
			if !hot[st.ID] && !hot[st.PaymentID] && !hot[st.Key] {
				continue
			}
			want++
			if len(s.Stories) == maxCompareStories {
				continue
			}
			st.ID = run.Name + "/" + st.ID
			s.Stories = append(s.Stories, st.ID)
			d.Stories = append(d.Stories, st)
		}
		d.StoriesTotal += want
		d.Strategies = append(d.Strategies, s)
		d.Links = append(d.Links, Link{Name: run.Name, Href: run.Href})
	}
	d.Omitted = d.StoriesTotal - len(d.Stories)
	if failed > 0 {
		d.Pass = false
	}
	d.Verdict = fmt.Sprintf("%d of %d strategies violated an invariant", failed, len(runs))
	return d
}
