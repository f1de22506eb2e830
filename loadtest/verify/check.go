package verify

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/record"
)

// Check evaluates every invariant on s and returns the report. It reads s
// only. Report.Pass is true when there is no violation.
func Check(s Snapshot) Report {
	c := checker{s: s, start: start(s)}
	r := Report{
		RunID:     s.RunID,
		Start:     c.start,
		Requests:  requests(s.Attempts),
		Drain:     s.Drain,
		Queues:    s.Queues,
		Takeovers: s.Takeovers,
	}
	for _, a := range s.Attempts {
		r.Span = max(r.Span, a.Time().Sub(c.start))
	}
	for _, e := range s.Faults {
		r.Faults = append(r.Faults, Fault{Event: e, At: e.Time.Sub(c.start)})
	}
	slices.SortStableFunc(r.Faults, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
	c.index()
	c.clientAnswers()                               // 1, 2
	c.oneRowPerKey()                                // 2
	c.charges()                                     // 3
	r.Payments = c.terminal()                       // 4
	r.DeadLetter, r.EarlierDeadLetters = c.parked() // 4
	c.boundary(&r.Boundary)                         // 5
	c.outbox()                                      // 5
	c.landed(r.Requests)                            // 6
	r.History = c.histories()                       // 7
	r.Matrix = c.matrix(r.Faults)
	r.PSP = PSP{ByOutcome: s.PSPCalls, Charges: len(s.Charges)}
	for _, n := range s.PSPCalls {
		r.PSP.Calls += n
	}
	slices.SortFunc(c.violations, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Invariant, b.Invariant), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(strings.Join(a.IDs, ","), strings.Join(b.IDs, ",")))
	})
	r.Violations = c.violations
	r.Pass = len(c.violations) == 0
	return r
}

// start is the first client attempt or fault, whichever came first.
func start(s Snapshot) time.Time {
	var t time.Time
	for _, a := range s.Attempts {
		if at := a.Time(); t.IsZero() || at.Before(t) {
			t = at
		}
	}
	for _, e := range s.Faults {
		if t.IsZero() || e.Time.Before(t) {
			t = e.Time
		}
	}
	return t
}

type checker struct {
	s          Snapshot
	start      time.Time
	violations []Violation

	byID      map[string]Payment
	byKey     map[string][]Payment // merchant:key
	chargesBy map[string][]Charge  // reference
	dead      map[string][]string  // payment id of the run -> reasons its messages were dead-lettered
}

func (c *checker) add(inv int, kind string, ids []string, format string, args ...any) {
	c.violations = append(c.violations, Violation{Invariant: inv, Kind: kind, IDs: ids, Detail: fmt.Sprintf(format, args...)})
}

func (c *checker) at(t time.Time) string { return fmt.Sprintf("t+%.1fs", t.Sub(c.start).Seconds()) }

func mk(merchant, key string) string { return merchant + ":" + key }

func (c *checker) index() {
	c.byID = map[string]Payment{}
	c.byKey = map[string][]Payment{}
	for _, p := range c.s.Payments {
		c.byID[p.ID] = p
		c.byKey[mk(p.Merchant, p.Key)] = append(c.byKey[mk(p.Merchant, p.Key)], p)
	}
	c.chargesBy = map[string][]Charge{}
	for _, ch := range c.s.Charges {
		c.chargesBy[ch.Reference] = append(c.chargesBy[ch.Reference], ch)
	}
	c.dead = map[string][]string{}
	for _, d := range c.s.DeadLetters {
		if _, ok := c.byID[d.MessageID]; ok {
			c.dead[d.MessageID] = append(c.dead[d.MessageID], d.Reason)
		}
	}
}

// clientAnswers checks every 2xx the client saw against the payment rows
// (invariant 1) and the answers to one key against each other and against
// the stored first response (invariant 2).
func (c *checker) clientAnswers() {
	type answer struct {
		first  record.Attempt
		n      int
		ids    map[string]bool
		bodies map[string]bool
	}
	byKey := map[string]*answer{}
	var keys []string
	reported := map[string]bool{}
	for _, a := range c.s.Attempts {
		if !a.Is2xx() {
			continue
		}
		k := mk(a.Merchant, a.Key)
		ans := byKey[k]
		if ans == nil {
			ans = &answer{first: a, ids: map[string]bool{}, bodies: map[string]bool{}}
			byKey[k] = ans
			keys = append(keys, k)
		}
		ans.n++
		ans.ids[a.PaymentID] = true
		ans.bodies[a.BodySHA256] = true

		once := k + "|" + a.PaymentID + "|" + fmt.Sprint(a.Amount)
		if reported[once] {
			continue
		}
		p, ok := c.byID[a.PaymentID]
		switch {
		case !ok:
			reported[once] = true
			c.add(1, KindLostPayment, []string{a.PaymentID, k},
				"client saw %d with payment %s for %s (amount %d) at %s, but there is no such payment row",
				a.Status, orNone(a.PaymentID), k, a.Amount, c.at(a.Time()))
		case p.Merchant != a.Merchant || p.Key != a.Key:
			reported[once] = true
			c.add(1, KindWrongPayment, []string{a.PaymentID, k, mk(p.Merchant, p.Key)},
				"client asked for %s and was answered with payment %s, which belongs to %s", k, a.PaymentID, mk(p.Merchant, p.Key))
		case p.Amount != a.Amount:
			reported[once] = true
			c.add(1, KindAmountDiffers, []string{a.PaymentID, k},
				"client sent amount %d for %s and got 2xx with payment %s, whose amount is %d", a.Amount, k, a.PaymentID, p.Amount)
		case p.ResponseSHA256 != "" && (a.BodySHA256 != p.ResponseSHA256 || a.Status != p.ResponseStatus):
			reported[once] = true
			c.add(2, KindStoredDiffers, []string{a.PaymentID, k},
				"answer %d (body sha256 %s) at %s differs from the stored first response %d (sha256 %s)",
				a.Status, short(a.BodySHA256), c.at(a.Time()), p.ResponseStatus, short(p.ResponseSHA256))
		}
	}
	for _, k := range keys {
		ans := byKey[k]
		if len(ans.ids) > 1 {
			c.add(2, KindKeyManyPayments, append([]string{k}, sorted(ans.ids)...),
				"%d answers for %s name %d different payments", ans.n, k, len(ans.ids))
		}
		if len(ans.bodies) > 1 {
			c.add(2, KindReplayDiffers, append([]string{k}, sortedShort(ans.bodies)...),
				"%d answers for %s are not byte-identical: %d different bodies", ans.n, k, len(ans.bodies))
		}
	}
}

// oneRowPerKey checks that no key has more than one payment row (the
// unique constraint should make this impossible).
func (c *checker) oneRowPerKey() {
	for _, k := range slices.Sorted(maps.Keys(c.byKey)) {
		if ps := c.byKey[k]; len(ps) > 1 {
			ids := []string{k}
			for _, p := range ps {
				ids = append(ids, p.ID)
			}
			c.add(2, KindDuplicatePayments, ids, "%d payment rows for %s", len(ps), k)
		}
	}
}

// charges checks invariant 3: at most one effective charge per payment and
// per key, and succeeded exactly when charged once for the payment's amount.
func (c *checker) charges() {
	byKey := map[string][]Charge{}
	for _, ch := range c.s.Charges {
		byKey[ch.IdempotencyKey] = append(byKey[ch.IdempotencyKey], ch)
	}
	doubled := map[string]bool{}
	for _, ref := range slices.Sorted(maps.Keys(c.chargesBy)) {
		chs := c.chargesBy[ref]
		if _, ok := c.byID[ref]; !ok {
			c.add(3, KindUnknownCharge, append([]string{ref}, chargeIDs(chs)...),
				"%d charge(s) reference %s, which is no payment of this run", len(chs), ref)
		}
		if len(chs) > 1 {
			c.add(3, KindDoubleCharge, append([]string{ref}, chargeIDs(chs)...),
				"payment %s was charged %d times (%s)", ref, len(chs), amounts(chs))
			for _, ch := range chs {
				doubled[ch.ID] = true
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		chs := byKey[k]
		if len(chs) > 1 && !doubled[chs[0].ID] {
			c.add(3, KindDoubleCharge, append([]string{k}, chargeIDs(chs)...),
				"key %s was charged %d times across payments (%s)", k, len(chs), amounts(chs))
		}
	}
	for _, p := range c.s.Payments {
		chs := c.chargesBy[p.ID]
		switch p.Status {
		case "succeeded":
			if len(chs) == 0 {
				c.add(3, KindSucceededNoCharge, []string{p.ID, mk(p.Merchant, p.Key)}, "payment %s is succeeded but the psp has no charge for it", p.ID)
				continue
			}
			if len(chs) == 1 && (chs[0].Amount != p.Amount || chs[0].Currency != p.Currency) {
				c.add(3, KindChargeAmount, []string{p.ID, chs[0].ID}, "payment %s is %d %s, its charge %s is %d %s",
					p.ID, p.Amount, p.Currency, chs[0].ID, chs[0].Amount, chs[0].Currency)
			}
			if len(chs) == 1 && p.PSPChargeID != chs[0].ID {
				c.add(3, KindChargeIDDiffers, []string{p.ID, chs[0].ID}, "payment %s records psp_charge_id %s, the psp charged %s",
					p.ID, orNone(p.PSPChargeID), chs[0].ID)
			}
		case "failed":
			if len(chs) > 0 {
				c.add(3, KindFailedCharged, append([]string{p.ID}, chargeIDs(chs)...), "payment %s is failed but was charged %d time(s)", p.ID, len(chs))
			}
		default:
			if len(chs) > 0 {
				where := ""
				if len(c.dead[p.ID]) > 0 {
					where = " (its message is in the dead-letter queue)"
				}
				c.add(3, KindPendingCharged, append([]string{p.ID}, chargeIDs(chs)...),
					"payment %s is still %s after the drain%s, yet the psp charged it %d time(s) (%s)", p.ID, p.Status, where, len(chs), amounts(chs))
			}
		}
	}
}

// terminal checks invariant 4 for the payments and counts them by status:
// every payment of the run is succeeded or failed after the drain. A
// pending payment whose message was dead-lettered is parked's violation;
// every other pending one is stuck.
func (c *checker) terminal() Payments {
	var n Payments
	for _, p := range c.s.Payments {
		n.Total++
		if len(c.dead[p.ID]) > 0 {
			n.DeadLettered++
		}
		switch p.Status {
		case "succeeded":
			n.Succeeded++
		case "failed":
			n.Failed++
		default:
			n.Pending++
			if len(c.dead[p.ID]) > 0 {
				continue
			}
			where := "not in the dead-letter queue"
			if c.s.Drain.Queued == 0 {
				where = "and no message is waiting for it in any queue, not even the dead-letter queue (lost?)"
			}
			ids := []string{p.ID, mk(p.Merchant, p.Key)}
			if chs := c.chargesBy[p.ID]; len(chs) > 0 {
				where += fmt.Sprintf("; the psp has charged it (%s)", amounts(chs))
				ids = append(ids, chargeIDs(chs)...)
			}
			c.add(4, KindStuckPending, ids,
				"payment %s (created %s) is still %s after a drain of %s, %s",
				p.ID, c.at(p.CreatedAt), p.Status, c.s.Drain.Took.Round(time.Second), where)
		}
	}
	return n
}

// parked checks invariant 4 for the dead-letter queue: no message of this
// run's payments is in it, whatever the reason (the broker's delivery
// limit, a nack after a failed forward, a message the worker could not
// handle) and whatever the payment's status since; each such payment is
// one violation naming its reasons. Messages of no payment of this run
// (earlier runs on the same runtime, foreign messages) are returned apart,
// as a count, and never judged. It returns the run's dead letters.
func (c *checker) parked() (run []DeadLetter, earlier int) {
	for _, d := range c.s.DeadLetters {
		if _, ok := c.byID[d.MessageID]; !ok {
			earlier++
			continue
		}
		run = append(run, d)
	}
	for _, id := range slices.Sorted(maps.Keys(c.dead)) {
		p, reasons := c.byID[id], c.dead[id]
		seen := map[string]bool{}
		var uniq []string
		for _, r := range reasons {
			r = cmp.Or(r, "(no reason given)")
			if !seen[r] {
				seen[r] = true
				uniq = append(uniq, r)
			}
		}
		c.add(4, KindDeadLettered, []string{p.ID, mk(p.Merchant, p.Key)},
			"payment %s (%s after the drain) had %d message(s) dead-lettered: %s",
			p.ID, p.Status, len(reasons), strings.Join(uniq, "; "))
	}
	return run, earlier
}

// boundary checks invariant 5 for the Redis records.
func (c *checker) boundary(b *Boundary) {
	keys := map[string]bool{}
	for _, st := range c.s.Boundary {
		keys[st.Key] = true
		switch {
		case st.State == "C":
			b.Completed++
		case st.State == "P" && st.Lease.After(c.s.Now):
			b.PendingLive++
		case st.State == "P":
			b.PendingStale++
			c.add(5, KindStaleBoundary, []string{st.Key, st.Stage},
				"boundary record %s stage %s is PENDING (attempt %d, owner %s) %s past its lease",
				st.Key, st.Stage, st.Attempt, orNone(st.Owner), c.s.Now.Sub(st.Lease).Round(time.Millisecond))
		}
	}
	b.Records = len(keys)
}

// outbox checks invariant 5 for the outbox: every payment has a row and
// every row was published.
func (c *checker) outbox() {
	has := map[string]bool{}
	for _, o := range c.s.Outbox {
		has[o.PaymentID] = true
		if !o.Published {
			c.add(5, KindUnpublishedOutbox, []string{fmt.Sprint(o.ID), o.PaymentID},
				"outbox row %d (payment %s) was never published", o.ID, o.PaymentID)
		}
	}
	for _, p := range c.s.Payments {
		if !has[p.ID] {
			c.add(5, KindNoOutbox, []string{p.ID}, "payment %s has no outbox row, so no message was ever sent for it", p.ID)
		}
	}
}

// requests counts the client's attempts.
func requests(attempts []record.Attempt) Requests {
	r := Requests{
		ByClass: map[record.Class]int{}, ByOutcome: map[record.Outcome]int{},
		ByScenario: map[string]int{}, CutOffByTarget: map[string]int{},
	}
	for _, a := range attempts {
		r.Attempts++
		r.ByClass[a.Class]++
		if a.N > 1 {
			r.Retries++
		}
		if a.Final {
			r.Logical++
			r.ByOutcome[a.Outcome]++
			r.ByScenario[a.Scenario]++
		}
		if a.Is2xx() && a.Replayed {
			r.Replays++
		}
		switch a.Class {
		case record.ClassConflict:
			r.Conflicts++
		case record.ClassMismatch:
			r.Mismatches++
		case record.ClassCutOff:
			r.CutOff++
			r.CutOffByTarget[a.Target]++
		case record.ClassRefused:
			r.Refused++
		case record.ClassTimeout:
			r.Timeouts++
		}
	}
	return r
}

func sorted(set map[string]bool) []string { return slices.Sorted(maps.Keys(set)) }

func sortedShort(set map[string]bool) []string {
	out := sorted(set)
	for i, s := range out {
		out[i] = "sha256:" + short(s)
	}
	return out
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return orNone(hash)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func chargeIDs(chs []Charge) []string {
	ids := make([]string, len(chs))
	for i, ch := range chs {
		ids[i] = ch.ID
	}
	return ids
}

func amounts(chs []Charge) string {
	parts := make([]string, len(chs))
	for i, ch := range chs {
		parts[i] = fmt.Sprintf("%s %d %s", ch.ID, ch.Amount, ch.Currency)
	}
	return strings.Join(parts, ", ")
}
