package verify

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/record"
)

// Liveness is invariant 8: the run finishes what it starts. Goodput comes
// back after every fault, no key stays blocked past its holder, and a
// payment the psp rejected ends failed while the others still settle.
type Liveness struct {
	// Lease is the api's IDEM_LEASE the key check allows a 409 for, past
	// the last attempt that may have held the key.
	Lease time.Duration `json:"lease_ns"`
	// Recoveries has one entry per fault, in time order (Report.Faults).
	Recoveries []Recovery `json:"recoveries"`
	// Blocked is the key answered 409 or 422 longest, nil when none was.
	Blocked  *BlockedKey `json:"longest_blocked,omitempty"`
	Rejected Rejected    `json:"rejected"`
}

// Recovery is how goodput (new payments answered 2xx per second, from the
// client's records) went around one fault.
type Recovery struct {
	Seq  int    `json:"seq"`
	Kind string `json:"kind"`
	// End is when the fault was over (applied plus its duration or how
	// long it took, a restart until the service answered), from the start
	// of the load. Bound is how long after End goodput may take to come
	// back (RecoveryBound).
	End   time.Duration `json:"end_ns"`
	Bound time.Duration `json:"bound_ns"`
	// Before is the goodput of the clean stretch before the fault (at most
	// recoveryBaseline long), During while it lasted.
	Before float64 `json:"before"`
	During float64 `json:"during"`
	// Measured: a clean baseline and enough time to the next fault (or
	// the end of the load) to see it come back or stay down; Why says
	// what was missing when not.
	Measured bool   `json:"measured"`
	Why      string `json:"why,omitempty"`
	// Recovered: goodput over recoveryWindow reached RecoveryShare of
	// Before; In is how long after End that window began.
	Recovered bool          `json:"recovered"`
	In        time.Duration `json:"in_ns"`
	// Shed and Timeouts count, for a stall, the attempts answered 503 and
	// those that timed out from the fault to its bound: a stalled
	// dependency must be shed with 503, not left to time out.
	Shed     int `json:"shed,omitempty"`
	Timeouts int `json:"timeouts,omitempty"`
}

// BlockedKey is the key blocked longest: answered 409 (in flight) or 422
// (reused) from First to Last. PastHolder is how long after the last
// attempt that may have held it a 409 still came (0 for 422s).
type BlockedKey struct {
	Key        string        `json:"key"`
	Status     int           `json:"status"` // 409 or 422
	Answers    int           `json:"answers"`
	First      time.Duration `json:"first_ns"`
	Last       time.Duration `json:"last_ns"`
	PastHolder time.Duration `json:"past_holder_ns"`
}

// Span is how long the key was seen blocked.
func (b BlockedKey) Span() time.Duration { return b.Last - b.First }

// Rejected counts the payments the psp rejected permanently (a 4xx that
// is no conflict or throttle: psp calls of the ledger) and, during
// reject faults, the other payments created meanwhile.
type Rejected struct {
	Payments   int `json:"payments"`    // rejected and never charged
	Failed     int `json:"failed"`      // of those, failed with a reason
	Others     int `json:"others"`      // created during a reject fault, not rejected
	OthersLate int `json:"others_late"` // of those, not settled within othersBound of the fault's end
}

// The recovery measure's constants.
const (
	// RecoveryShare of the pre-fault goodput is "back".
	RecoveryShare = 0.9
	// recoveryBaseline is the longest stretch before a fault its baseline
	// is measured over; minBaseline the shortest that counts.
	recoveryBaseline = 10 * time.Second
	minBaseline      = 3 * time.Second
	// recoveryWindow is the stretch whose goodput must reach the share, so
	// that one slow second is not a relapse nor one busy second recovery.
	recoveryWindow = 3 * time.Second
	// recoveryStep is how finely the window slides.
	recoveryStep = 250 * time.Millisecond
	// warmup is left out of a baseline: k6 starts its VUs.
	warmup = 2 * time.Second
	// minGoodput (payments/s) is the lowest baseline a recovery can be
	// measured against.
	minGoodput = 1.0
	// blockedGrace absorbs the client's and the server's clocks and the
	// time a request takes to reach Begin.
	blockedGrace = time.Second
	// minMeasuredLoad: a fault run whose load lasted this long (or a
	// fault matrix) must have one fault whose recovery was measured.
	minMeasuredLoad = 30 * time.Second
	// defaultLease is the api's default IDEM_LEASE.
	defaultLease = 10 * time.Second
	// othersBound is how long after a reject fault ends the payments
	// created during it may take to settle (worker retries 1 s, 5 s, 15 s
	// and the reconciler's round).
	othersBound = 60 * time.Second
)

// RecoveryBound is how long after a fault of kind ends goodput may take to
// come back to RecoveryShare of what it was before. The bounds come from
// what each kind takes down and the recovery times measured on the three
// runtimes (docs/runtimes.md, docs/deploy-ha.md): the fault's own end
// already includes a restart until the service answers, so what is left is
// reconnecting and draining what queued up meanwhile.
func RecoveryBound(kind string) time.Duration {
	switch kind {
	case "stall-redis":
		// Redis answers the moment it resumes; a boundary that does not
		// queue work whose callers are gone serves at once. 5 s is half
		// of what a pipe that sends stale work needs after a 1 s stall.
		return 5 * time.Second
	case "restart-rabbitmq", "kill-rabbitmq", "kill-rabbitmq-leader", "partition-rabbitmq", "delete-queue":
		// The api's answer does not wait on the broker, but its relay and
		// readiness do: connections come back within the reconnect
		// backoff, a new queue leader within 20 s (measured 2–20 s).
		return 30 * time.Second
	case "restart-postgres", "kill-postgres", "failover-redis", "pause-api",
		"failover-postgres", "failover-postgres-lagged", "switchover-postgres", "partition-postgres":
		// Pools redial after a restart, WAL recovery is in the restart; a
		// Redis failover's last refusals end a few seconds after its
		// replica took over (7–10 s refused, measured); a resumed api's
		// claims end with their lease.
		return 15 * time.Second
	}
	// A replica crash or pause (its supervisor restarts it within a
	// second; the other replica carries the load), a network fault on one
	// replica's path, a Redis restart, flush or slot migration, a psp
	// fault: the api's answers wait on none of these once the fault ends.
	return 10 * time.Second
}

// liveness checks invariant 8 and returns its account.
func (c *checker) liveness(faults []Fault) Liveness {
	l := Liveness{Lease: cmp.Or(c.s.Lease, defaultLease)}
	l.Recoveries = c.recoveries(faults)
	l.Blocked = c.blockedKeys(l.Lease)
	l.Rejected = c.rejected(faults)
	return l
}

// goodput returns when each new payment was first answered 2xx: per key,
// the end of its first 2xx attempt, sorted.
func goodput(attempts []record.Attempt) []time.Time {
	first := map[string]time.Time{}
	for _, a := range attempts {
		if !a.Is2xx() {
			continue
		}
		k, end := mk(a.Merchant, a.Key), a.EndTime()
		if t, ok := first[k]; !ok || end.Before(t) {
			first[k] = end
		}
	}
	return slices.SortedFunc(maps.Values(first), func(a, b time.Time) int { return a.Compare(b) })
}

// arrivals returns, sorted, when each key was first tried: the new
// payments the load offered, whatever their answers.
func arrivals(attempts []record.Attempt) []time.Time {
	first := map[string]time.Time{}
	for _, a := range attempts {
		k, at := mk(a.Merchant, a.Key), a.Time()
		if t, ok := first[k]; !ok || at.Before(t) {
			first[k] = at
		}
	}
	return slices.SortedFunc(maps.Values(first), func(a, b time.Time) int { return a.Compare(b) })
}

// rate is the goodput in [from, to), per second.
func rate(ts []time.Time, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	i, _ := slices.BinarySearchFunc(ts, from, func(a, b time.Time) int { return a.Compare(b) })
	j, _ := slices.BinarySearchFunc(ts, to, func(a, b time.Time) int { return a.Compare(b) })
	return float64(j-i) / to.Sub(from).Seconds()
}

// Cell is the matrix's "recovered in" cell: "1.2s / 10s" (in / bound),
// "NEVER / 10s", "n/m" (not measured: Why says why) or "-" for no row.
func (r *Recovery) Cell() string {
	switch {
	case r == nil:
		return "-"
	case r.Recovered && r.Measured:
		return fmt.Sprintf("%.1fs / %s", r.In.Seconds(), r.Bound)
	case r.Measured:
		return fmt.Sprintf("NEVER / %s", r.Bound)
	}
	return "n/m"
}

// Summary is invariant 8's account on one line.
func (l Liveness) Summary() string {
	var b strings.Builder
	measured, slowest := 0, time.Duration(0)
	for _, r := range l.Recoveries {
		if r.Measured {
			measured++
			slowest = max(slowest, r.In)
		}
	}
	fmt.Fprintf(&b, "[recovery measured for %d of %d faults, slowest %.1fs", measured, len(l.Recoveries), slowest.Seconds())
	if k := l.Blocked; k != nil {
		fmt.Fprintf(&b, "; longest blocked key %s: %d x %d over %.1fs, %.1fs past its holder (lease %s)",
			k.Key, k.Answers, k.Status, k.Span().Seconds(), k.PastHolder.Seconds(), l.Lease)
	} else {
		b.WriteString("; no key answered 409 or 422")
	}
	if x := l.Rejected; x.Payments > 0 || x.Others > 0 {
		fmt.Fprintf(&b, "; psp rejected %d payments, %d failed with a reason; %d others during rejects, %d late", x.Payments, x.Failed, x.Others, x.OthersLate)
	}
	b.WriteString("]")
	return b.String()
}

// faultEnd is when a fault was over: applied plus its duration or what it
// took, whichever is longer.
func faultEnd(f Fault) time.Time {
	return f.Time.Add(time.Duration(max(f.ForMS, f.TookMS)) * time.Millisecond)
}

// recoveries measures goodput around every fault. A fault's baseline is the
// stretch before it, after the fault before it came back; its horizon ends
// at the next fault (or the end of the load). A fault whose goodput is not
// back by its bound, with the horizon reaching past it, is a violation; so
// is a run where no fault could be measured at all.
func (c *checker) recoveries(faults []Fault) []Recovery {
	if len(faults) == 0 || len(c.s.Attempts) == 0 {
		return nil
	}
	ts, offered := goodput(c.s.Attempts), arrivals(c.s.Attempts)
	loadStart, loadEnd := c.start, c.start
	for _, a := range c.s.Attempts {
		loadEnd = maxTime(loadEnd, a.Time())
	}
	out := make([]Recovery, len(faults))
	clear := loadStart.Add(warmup) // the earliest a baseline may start
	measured := 0
	for i, f := range faults {
		kind := cmp.Or(f.Kind, fault.KindOf(f.Action, f.Target))
		end := faultEnd(f)
		r := Recovery{Seq: f.Seq, Kind: kind, End: end.Sub(c.start), Bound: RecoveryBound(kind)}
		if end.After(f.Time) {
			r.During = rate(ts, f.Time, end)
		}
		horizon := loadEnd
		if i+1 < len(faults) {
			horizon = minTime(horizon, faults[i+1].Time)
		}
		from := maxTime(clear, f.Time.Add(-recoveryBaseline))
		// at most what the load offered: right after a fault the retries
		// of the payments it refused succeed together, a burst no later
		// stretch of the same load can match
		r.Before = min(rate(ts, from, f.Time), rate(offered, from, f.Time))
		switch {
		case f.Time.Sub(from) < minBaseline:
			r.Why = fmt.Sprintf("no clean baseline: %.1fs since the load began or the fault before came back", max(f.Time.Sub(from), 0).Seconds())
		case r.Before < minGoodput:
			r.Why = fmt.Sprintf("baseline goodput %.1f/s, below %.0f/s", r.Before, minGoodput)
		default:
			r.Measured = true
		}
		if r.Measured {
			c.recovery(&r, ts, end, horizon, loadEnd)
		}
		if r.Measured {
			measured++
		}
		if f.Action == fault.ActionStall {
			c.shed(&r, f.Time, end.Add(r.Bound))
		}
		// the next baseline starts once this fault's effect is over: when
		// goodput came back, or, if it did not, never (clear past the run);
		// after a fault that could not be judged, when it was over (a
		// dense plan still gets baselines; one that includes the dip is
		// only lower, and a fault that never came back is caught above)
		switch {
		case r.Recovered:
			clear = maxTime(clear, end.Add(r.In))
		case r.Measured:
			clear = loadEnd.Add(time.Hour)
		default:
			clear = maxTime(clear, end)
		}
		out[i] = r
	}
	if measured == 0 && loadEnd.Sub(loadStart) >= minMeasuredLoad {
		c.add(8, KindRecoveryUnmeasured, nil,
			"no fault's recovery could be measured (%d faults; first: %s): invariant 8 proved nothing", len(faults), out[0].Why)
	}
	return out
}

// recovery slides a window from the fault's end towards its horizon until
// goodput in it reaches the share of the baseline, and records a
// violation when it does not come back within the bound. A fault the next
// one came too early to judge is still a violation if goodput never came
// back before the end of the load, its bound long after it.
func (c *checker) recovery(r *Recovery, ts []time.Time, end, horizon, loadEnd time.Time) {
	want := RecoveryShare * r.Before
	back := func(until time.Time) (time.Duration, bool) {
		for at := end; !at.Add(recoveryWindow).After(until); at = at.Add(recoveryStep) {
			if rate(ts, at, at.Add(recoveryWindow)) >= want {
				return at.Sub(end), true
			}
		}
		return 0, false
	}
	r.In, r.Recovered = back(horizon)
	switch {
	case r.Recovered && r.In <= r.Bound:
	case r.Recovered:
		c.add(8, KindSlowRecovery, []string{fmt.Sprint(r.Seq), r.Kind},
			"after fault %d (%s, over at %s) goodput came back to %.0f%% of %.1f/s only after %s, bound %s",
			r.Seq, r.Kind, c.at(end), RecoveryShare*100, r.Before, r.In.Round(100*time.Millisecond), r.Bound)
	case horizon.Sub(end) >= r.Bound+recoveryWindow:
		c.add(8, KindNoRecovery, []string{fmt.Sprint(r.Seq), r.Kind},
			"after fault %d (%s, over at %s) goodput never came back to %.0f%% of %.1f/s within its bound %s (%.1f/s during the fault, %.1f/s in the %s after the bound)",
			r.Seq, r.Kind, c.at(end), RecoveryShare*100, r.Before, r.Bound, r.During,
			rate(ts, end.Add(r.Bound), end.Add(r.Bound+recoveryWindow)), recoveryWindow)
	default:
		r.Measured = false
		if _, ever := back(loadEnd); !ever && loadEnd.Sub(end) >= r.Bound+recoveryWindow {
			c.add(8, KindNoRecovery, []string{fmt.Sprint(r.Seq), r.Kind},
				"after fault %d (%s, over at %s) goodput never came back to %.0f%% of %.1f/s, not even by the end of the load %s later (faults after it included)",
				r.Seq, r.Kind, c.at(end), RecoveryShare*100, r.Before, loadEnd.Sub(end).Round(time.Second))
		}
		r.Why = fmt.Sprintf("not back yet when the next fault (or the end of the load) came %.1fs after it, before its bound %s", max(horizon.Sub(end), 0).Seconds(), r.Bound)
	}
}

// shed counts a stall's 503s and timeouts in [from, to) and records a
// violation for every timeout: the api must answer while a dependency
// stalls.
func (c *checker) shed(r *Recovery, from, to time.Time) {
	var first time.Time
	for _, a := range c.s.Attempts {
		if end := a.EndTime(); end.Before(from) || !end.Before(to) {
			continue
		}
		switch a.Class {
		case record.ClassUnavailable:
			r.Shed++
		case record.ClassTimeout:
			if r.Timeouts == 0 || a.EndTime().Before(first) {
				first = a.EndTime()
			}
			r.Timeouts++
		}
	}
	if r.Timeouts > 0 {
		c.add(8, KindStallTimeouts, []string{fmt.Sprint(r.Seq), r.Kind},
			"during fault %d (%s) and its bound %d attempts timed out (first at %s) instead of being shed (%d answered 503)",
			r.Seq, r.Kind, r.Timeouts, c.at(first), r.Shed)
	}
}

// blockedKeys checks that no key answered 409 longer than lease after the
// last attempt that may have held it, and none 422 unless a payment holds
// another payload for it; it returns the key blocked longest.
func (c *checker) blockedKeys(lease time.Duration) *BlockedKey {
	byKey := map[string][]record.Attempt{}
	for _, a := range c.s.Attempts {
		k := mk(a.Merchant, a.Key)
		byKey[k] = append(byKey[k], a)
	}
	var longest *BlockedKey
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		as := byKey[k]
		slices.SortStableFunc(as, func(a, b record.Attempt) int { return a.Time().Compare(b.Time()) })
		if b := c.conflicts(k, as, lease); b != nil && (longest == nil || b.Span() > longest.Span()) {
			longest = b
		}
		if b := c.mismatches(k, as); b != nil && (longest == nil || b.Span() > longest.Span()) {
			longest = b
		}
	}
	return longest
}

// conflicts checks the 409s of one key's attempts, sorted by start. The
// holder of a 409'd key is an attempt of the key that is no 409 or 422
// and began before the 409 was answered; it is gone when the last of them
// has its answer. With none, the first 409'd request holds its own claim
// (a retried Begin), gone when it was answered.
func (c *checker) conflicts(k string, as []record.Attempt, lease time.Duration) *BlockedKey {
	var b *BlockedKey
	var worst record.Attempt
	for _, a := range as {
		if a.Class != record.ClassConflict {
			continue
		}
		var gone time.Time
		for _, h := range as {
			if h.Class != record.ClassConflict && h.Class != record.ClassMismatch && h.Time().Before(a.EndTime()) {
				gone = maxTime(gone, h.EndTime())
			}
		}
		if gone.IsZero() {
			gone = as[slices.IndexFunc(as, func(x record.Attempt) bool { return x.Class == record.ClassConflict })].EndTime()
		}
		past := max(a.Time().Sub(gone), 0)
		if b == nil {
			b = &BlockedKey{Key: k, Status: 409, First: a.Time().Sub(c.start)}
		}
		b.Answers++
		b.Last = a.Time().Sub(c.start)
		if worst.Key == "" || past > b.PastHolder {
			b.PastHolder, worst = past, a
		}
	}
	if b != nil && b.PastHolder > lease+blockedGrace {
		c.add(8, KindKeyBlocked, c.keyIDs(k),
			"key %s answered 409 at %s, %s after the last attempt that may have held it was answered (lease %s): blocked with its holder gone",
			k, c.at(worst.Time()), b.PastHolder.Round(100*time.Millisecond), lease)
	}
	return b
}

// mismatches checks the 422s of one key: each needs a payment of the key
// that holds another payload.
func (c *checker) mismatches(k string, as []record.Attempt) *BlockedKey {
	var b *BlockedKey
	var bad []record.Attempt
	for _, a := range as {
		if a.Class != record.ClassMismatch {
			continue
		}
		if b == nil {
			b = &BlockedKey{Key: k, Status: 422, First: a.Time().Sub(c.start)}
		}
		b.Answers++
		b.Last = a.Time().Sub(c.start)
		ps := c.byKey[k]
		if len(ps) == 0 || (a.Fingerprint != "" && ps[0].Fingerprint == a.Fingerprint) {
			bad = append(bad, a)
		}
	}
	if len(bad) == 0 {
		return b
	}
	why := "no payment exists for it"
	if len(c.byKey[k]) > 0 {
		why = fmt.Sprintf("its payment %s holds that very payload", c.byKey[k][0].ID)
	}
	c.add(8, KindMismatchNoPayment, c.keyIDs(k),
		"key %s answered 422 (key reused with another payload) %d time(s) from %s to %s, but %s",
		k, len(bad), c.at(bad[0].Time()), c.at(bad[len(bad)-1].Time()), why)
	return b
}

// keyIDs names a key and its payment, if it has one.
func (c *checker) keyIDs(k string) []string {
	ids := []string{k}
	for _, p := range c.byKey[k] {
		ids = append(ids, p.ID)
	}
	return ids
}

// permanent reports whether a psp answer rejects a charge for good: a 4xx
// that is no timeout, conflict or throttle.
func permanent(status int) bool {
	return status >= 400 && status < 500 && status != 408 && status != 409 && status != 425 && status != 429
}

// rejected checks that every payment the psp rejected permanently, and
// never charged, ended failed with a reason, its message not dead-lettered;
// and that, during each reject fault, the payments it did not reject
// still settled within othersBound of its end.
func (c *checker) rejected(faults []Fault) Rejected {
	var n Rejected
	rejected := map[string]int{} // payment id -> the status the psp rejected it with
	for _, call := range c.s.PSPCallLog {
		if permanent(call.HTTPStatus) && call.Reference != "" {
			rejected[call.Reference] = call.HTTPStatus
		}
	}
	for _, id := range slices.Sorted(maps.Keys(rejected)) {
		p, ok := c.byID[id]
		if !ok || len(c.chargesBy[id]) > 0 {
			continue // no payment of this run, or charged after all (invariant 3's)
		}
		n.Payments++
		ids := []string{p.ID, mk(p.Merchant, p.Key)}
		switch {
		case len(c.dead[p.ID]) > 0:
			c.add(8, KindRejectedDeadLettered, ids,
				"payment %s (%s) was rejected by the psp (%d) and its message dead-lettered, instead of settling it failed", p.ID, p.Status, rejected[id])
		case p.Status != "failed":
			c.add(8, KindRejectedNotFailed, ids,
				"payment %s was rejected by the psp (%d) and is %s after the drain, not failed", p.ID, rejected[id], p.Status)
		case p.FailureReason == "":
			c.add(8, KindRejectedNoReason, ids,
				"payment %s was rejected by the psp (%d) and is failed without a reason", p.ID, rejected[id])
		default:
			n.Failed++
		}
	}
	for _, f := range faults {
		if f.Action != fault.ActionReject {
			continue
		}
		end := faultEnd(f)
		for _, p := range c.s.Payments {
			if _, ok := rejected[p.ID]; ok || p.CreatedAt.Before(f.Time) || !p.CreatedAt.Before(end) {
				continue
			}
			n.Others++
			if terminal := p.Status == "succeeded" || p.Status == "failed"; terminal && !p.UpdatedAt.After(end.Add(othersBound)) {
				continue
			}
			n.OthersLate++
			c.add(8, KindOthersStarved, []string{p.ID, mk(p.Merchant, p.Key)},
				"payment %s, created at %s during fault %d (psp rejecting), was not rejected yet is %s, last updated %s: not settled within %s of the fault's end",
				p.ID, c.at(p.CreatedAt), f.Seq, p.Status, c.at(p.UpdatedAt), othersBound)
		}
	}
	return n
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
