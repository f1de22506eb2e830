package verify

import (
	"fmt"
	"time"

	"github.com/oncepay/oncepay/loadtest/history"
)

// History is invariant 7: the client's attempts per (merchant, key), closed
// by the final read of the payment row and its psp charges, checked for
// linearizability against the model of package history.
type History struct {
	history.Result
	// Unchecked says why the histories could not be checked ("" if they were).
	Unchecked string `json:"unchecked,omitempty"`
	// HTML names porcupine's visualization of the violating keys, a file in
	// the run directory, once the caller wrote it (Result.WriteHTML).
	HTML string `json:"html,omitempty"`
}

// histories checks invariant 7.
func (c *checker) histories() History {
	finals := map[string]history.Input{}
	charges := map[string]map[string]history.Charge{} // merchant:key -> charge id -> charge
	addCharge := func(k string, ch Charge) {
		if charges[k] == nil {
			charges[k] = map[string]history.Charge{}
		}
		charges[k][ch.ID] = history.Charge{ID: ch.ID, Amount: ch.Amount}
	}
	for _, ch := range c.s.Charges {
		if p, ok := c.byID[ch.Reference]; ok {
			addCharge(mk(p.Merchant, p.Key), ch)
		}
		addCharge(ch.IdempotencyKey, ch) // the worker sends <merchant>:<key>
	}
	for k, ps := range c.byKey {
		p := ps[0] // more than one row is invariant 2's; the model sees the first
		finals[k] = history.Input{Row: &history.Row{
			ID: p.ID, Fingerprint: p.Fingerprint, Amount: p.Amount, Status: p.Status, ResponseSHA256: p.ResponseSHA256,
		}}
	}
	for k, chs := range charges {
		f := finals[k]
		for _, ch := range chs {
			f.Charges = append(f.Charges, ch)
		}
		finals[k] = f
	}
	parts, err := history.FromRecords(c.s.Attempts, finals)
	if err != nil {
		c.add(7, KindHistoryUnchecked, nil, "the client's histories cannot be checked: %v", err)
		return History{Result: history.Result{Verdict: history.VerdictUnknown}, Unchecked: err.Error()}
	}
	r := history.Check(parts, history.Config{Start: c.start})
	for _, v := range r.Violations {
		kind, what := KindNotLinearizable, "is not linearizable against the model"
		if v.Verdict == history.VerdictUnknown {
			kind, what = KindHistoryUnknown, "could not be checked in time (porcupine: unknown)"
		}
		c.add(7, kind, []string{v.Key}, "the history of %s (%d operations) %s", v.Key, len(v.Ops), what)
	}
	return History{Result: r}
}

// summary is invariant 7's note on its report line.
func (h History) summary() string {
	if h.Unchecked != "" {
		return "[not checked]"
	}
	return fmt.Sprintf("[%d keys, %d operations, %d ambiguous, %s in %s]",
		h.Partitions, h.Operations, h.Ambiguous, h.Verdict, h.Took.Round(time.Millisecond))
}

// maxListed bounds the violating keys whose operations the text lists.
const maxListed = 20

// write prints the histories section: the counts, and for each violating
// key its operations in order.
func (h History) write(p *printer) {
	p.f("\nhistories  %d keys (%d with overlapping clients), %d operations (%d ambiguous): %s, checked in %s\n",
		h.Partitions, h.Concurrent, h.Operations, h.Ambiguous, h.Verdict, h.Took.Round(time.Millisecond))
	if h.Unchecked != "" {
		p.f("  not checked: %s\n", h.Unchecked)
	}
	for i, v := range h.Violations {
		if i == maxListed {
			p.f("  ... and %d more keys (report.json)\n", len(h.Violations)-maxListed)
			break
		}
		p.f("  %s %s:\n", v.Key, v.Verdict)
		for _, op := range v.Ops {
			p.f("    %s\n", op)
		}
	}
	if h.HTML != "" {
		p.f("  porcupine's view of the violating keys: %s\n", h.HTML)
	}
}
