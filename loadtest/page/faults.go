package page

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/verify"
)

// addFaults records, for every fault, the stories it hit: the requests
// cut off, refused, answered 503 or timed out, and the psp calls whose
// answer was lost, within its window (hitBefore before it to hitAfter
// after it ended); the outbox rows that waited for the broker while a
// broker fault lasted; and the lease takeovers it caused (see
// takeoverAfter). Where windows overlap, the latest fault that can have
// caused the event hit it: a client's error comes from a fault of an api
// replica, Postgres or Redis; a lost psp answer from a fault of a worker
// or of the psp.
func (b *builder) addFaults(faults []verify.Fault) {
	rows := map[int]verify.FaultRow{}
	for _, row := range b.r.Matrix {
		rows[row.Seq] = row
	}
	sorted := append([]verify.Fault(nil), faults...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Time.Before(sorted[j].Time) })
	ends := func(f verify.Fault) time.Time { return f.Time.Add(time.Duration(f.TookMS)*time.Millisecond + hitAfter) }
	// culprit is the latest fault that can have caused what happened at
	// t and whose window holds t.
	culprit := func(t time.Time, can func(verify.Fault) bool) (verify.Fault, bool) {
		for i := len(sorted) - 1; i >= 0; i-- {
			f := sorted[i]
			if can(f) && !t.Before(f.Time.Add(-hitBefore)) && !t.After(ends(f)) {
				return f, true
			}
		}
		return verify.Fault{}, false
	}
	// A client sees a fault of the api or of what it calls while it
	// answers (Postgres, Redis); a psp answer is lost by a fault of a
	// worker or of the psp.
	client := func(f verify.Fault) bool {
		return !strings.HasPrefix(f.Target, "worker-") && !strings.Contains(f.Target, "rabbitmq") &&
			!strings.Contains(f.Target, "psp") && f.Kind != "delete-queue"
	}
	charge := func(f verify.Fault) bool {
		return strings.HasPrefix(f.Target, "worker-") || strings.Contains(f.Target, "psp")
	}
	hits := map[int][]string{}
	seen := map[string]bool{}
	mark := func(f verify.Fault, st *Story, why string, direct bool) {
		if st == nil {
			return
		}
		b.direct[st.ID] = b.direct[st.ID] || direct
		if seen[fmt.Sprint(f.Seq, st.ID)] {
			return
		}
		seen[fmt.Sprint(f.Seq, st.ID)] = true
		hits[f.Seq] = append(hits[f.Seq], st.ID)
		st.Faults = append(st.Faults, f.Seq)
		st.add(b.ms(f.Time), "fault", "bad", "fault %d, %s, hit this key: %s", f.Seq, faultLabel(f), why)
	}
	for _, a := range b.s.Attempts {
		switch a.Class {
		case record.ClassCutOff, record.ClassRefused, record.ClassUnavailable, record.ClassServerError, record.ClassTimeout, record.ClassTransport:
		default:
			continue
		}
		if f, ok := culprit(a.EndTime(), client); ok {
			_, what := attemptText(a)
			mark(f, b.byKey(a.Merchant+":"+a.Key), fmt.Sprintf("attempt %d %s", a.N, what), true)
		}
	}
	for _, c := range b.s.PSPCallLog {
		if c.Outcome != "cancelled" && c.Outcome != "fail_after" {
			continue
		}
		if f, ok := culprit(c.ReceivedAt, charge); ok {
			st := b.byPayment(c.Reference)
			if st == nil {
				st = b.byKey(c.IdempotencyKey)
			}
			mark(f, st, "its psp answer was lost", true)
		}
	}
	for _, f := range sorted {
		if !strings.Contains(f.Target, "rabbitmq") && f.Kind != "delete-queue" {
			continue
		}
		for _, o := range b.s.Outbox {
			if !o.CreatedAt.Before(f.Time) && !o.CreatedAt.After(ends(f)) && o.Attempts > 1 {
				mark(f, b.byPayment(o.PaymentID), fmt.Sprintf("its message waited in the outbox (%d publish attempts)", o.Attempts), false)
			}
		}
	}
	// A takeover follows the fault that left a lease to expire: the
	// latest fault of a worker or of Redis at least takeoverAfter before
	// it, else the latest fault before it.
	for _, tk := range b.s.Takeovers {
		var worker, redis, last *verify.Fault
		for i := range sorted {
			f := &sorted[i]
			if f.Time.After(tk.TakenAt) {
				break
			}
			last = f
			if f.Time.After(tk.TakenAt.Add(-takeoverAfter)) {
				continue
			}
			switch {
			case strings.HasPrefix(f.Target, "worker-"):
				worker = f
			case strings.Contains(f.Target, "redis"):
				redis = f
			}
		}
		for _, by := range []*verify.Fault{worker, redis, last} {
			if by != nil {
				mark(*by, b.byPayment(tk.PaymentID), tk.Worker+" took its charge lease over", true)
				break
			}
		}
	}
	for _, f := range faults {
		row := rows[f.Seq]
		hit := f.Hit
		if hit == "" {
			hit = row.Hit
		}
		ids := hits[f.Seq]
		if ids == nil {
			ids = []string{}
		}
		pf := Fault{Seq: f.Seq, AtMS: f.At.Milliseconds(), Label: faultLabel(f), Action: string(f.Action),
			Text: strings.ReplaceAll(strings.Join(strings.Fields(verify.Describe(f.Event)), " "), " ,", ","), Hit: hit, InFlight: f.InFlight, Frozen: f.Frozen,
			Landed: f.Landed() && (len(b.r.Matrix) == 0 || row.Landed), TookMS: f.TookMS,
			CutOff: row.CutOff, Takeovers: row.Takeovers, Stories: ids, Recovered: row.Recovery.Cell()}
		if rec := row.Recovery; rec != nil {
			pf.Why = rec.Why
			switch {
			case rec.Measured && rec.Recovered:
				pf.BackMS = (rec.End + rec.In).Milliseconds()
			case rec.Measured:
				pf.NeverMS = (rec.End + rec.Bound).Milliseconds()
			}
		}
		b.faults = append(b.faults, pf)
	}
}
