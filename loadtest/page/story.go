package page

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/verify"
)

// builder gathers the stories of a run, one per merchant and key.
type builder struct {
	r      verify.Report
	s      verify.Snapshot
	start  time.Time
	byID   map[string]*Story
	order  []string
	byPay  map[string]string // payment id -> story id
	direct map[string]bool   // stories a fault hit in flight: a request, a psp answer or a lease
	faults []Fault
}

func newBuilder(r verify.Report, s verify.Snapshot) *builder {
	return &builder{r: r, s: s, start: r.Start, byID: map[string]*Story{}, byPay: map[string]string{},
		direct: map[string]bool{}}
}

func (b *builder) ms(t time.Time) int64 { return t.Sub(b.start).Milliseconds() }

// story returns the story of merchant and key, creating it.
func (b *builder) story(merchant, key string) *Story {
	id := merchant + ":" + key
	if st, ok := b.byID[id]; ok {
		return st
	}
	st := &Story{ID: id, Merchant: merchant, Key: key, Status: "none"}
	b.byID[id] = st
	b.order = append(b.order, id)
	return st
}

func (st *Story) add(t int64, src, level, format string, args ...any) {
	st.Events = append(st.Events, Event{AtMS: t, Src: src, Level: level, Text: fmt.Sprintf(format, args...)})
}

func (st *Story) tag(t string) {
	for _, x := range st.Tags {
		if x == t {
			return
		}
	}
	st.Tags = append(st.Tags, t)
}

// addAttempts adds every client attempt.
func (b *builder) addAttempts() {
	for _, a := range b.s.Attempts {
		st := b.story(a.Merchant, a.Key)
		if st.Amount == 0 {
			st.Amount = a.Amount
		}
		st.tag(a.Scenario)
		if a.N > 1 {
			st.tag("retried")
		}
		level, what := attemptText(a)
		switch a.Class {
		case record.ClassCutOff:
			st.tag("cut off")
		case record.ClassConflict:
			st.tag("409")
		case record.ClassUnavailable:
			st.tag("503")
		case record.ClassMismatch:
			st.tag("422")
		}
		if a.Replayed {
			st.tag("replayed")
		}
		client := fmt.Sprintf("vu %d iter %d", a.VU, a.Iter)
		if a.Copy > 0 {
			client += fmt.Sprintf(" copy %d", a.Copy)
		}
		st.add(b.ms(a.Time()), "client", level, "attempt %d → %s: %s in %.0f ms (%s, amount %d)",
			a.N, a.Target, what, float64(a.EndTime().Sub(a.Time()).Microseconds())/1000, client, a.Amount)
		if a.Final && a.Outcome != record.OutcomeOK {
			st.add(b.ms(a.EndTime()), "client", "bad", "request ended: %s after %d attempts", a.Outcome, a.N)
		}
	}
}

// attemptText is the level and the answer of one attempt.
func attemptText(a record.Attempt) (level, text string) {
	switch {
	case a.Is2xx() && a.Replayed:
		return "", fmt.Sprintf("%d %s, replayed", a.Status, a.PaymentID)
	case a.Is2xx():
		return "ok", fmt.Sprintf("%d %s", a.Status, a.PaymentID)
	}
	switch a.Class {
	case record.ClassConflict:
		return "warn", "409 in flight"
	case record.ClassMismatch:
		return "", "422 key reused with another payload"
	case record.ClassUnavailable:
		return "warn", "503 unavailable"
	case record.ClassCutOff:
		return "bad", "cut off in flight (" + a.Error + ")"
	case record.ClassRefused:
		return "warn", "connection refused"
	case record.ClassTimeout:
		return "bad", "timed out"
	}
	if a.Status != 0 {
		return "bad", fmt.Sprintf("%d %s", a.Status, a.Class)
	}
	return "bad", fmt.Sprintf("%s (%s)", a.Class, a.Error)
}

// addPayments adds the payment rows, their outbox rows, the takeovers, the
// psp calls and the boundary records.
func (b *builder) addPayments() {
	for _, p := range b.s.Payments {
		st := b.story(p.Merchant, p.Key)
		st.PaymentID, st.Amount, st.Status = p.ID, p.Amount, p.Status
		b.byPay[p.ID] = st.ID
		st.add(b.ms(p.CreatedAt), "db", "", "payment row %s committed: pending, %d %s, answer %d stored", p.ID, p.Amount, p.Currency, p.ResponseStatus)
		switch p.Status {
		case "succeeded":
			st.add(b.ms(p.UpdatedAt), "db", "ok", "payment succeeded, charge %s", p.PSPChargeID)
		case "failed":
			st.add(b.ms(p.UpdatedAt), "db", "", "payment failed (declined)")
		default:
			st.add(b.ms(p.UpdatedAt), "db", "bad", "payment still %s after the drain", p.Status)
		}
	}
	for _, o := range b.s.Outbox {
		st := b.byPayment(o.PaymentID)
		if st == nil {
			continue
		}
		st.add(b.ms(o.CreatedAt), "outbox", "", "outbox row #%d committed with the payment", o.ID)
		if o.Published {
			st.add(b.ms(o.PublishedAt), "outbox", "", "published, broker confirmed (%d publish attempt%s)", o.Attempts, plural(o.Attempts))
		} else {
			st.add(b.ms(b.start.Add(b.r.Span)), "outbox", "bad", "never confirmed by the broker (%d publish attempts)", o.Attempts)
		}
		if o.Republished > 0 {
			st.tag("republished")
			st.add(b.ms(o.RepublishedAt), "outbox", "warn", "published again by the sweeper (%d time%s)", o.Republished, plural(o.Republished))
		}
	}
	for _, t := range b.s.Takeovers {
		st := b.byPayment(t.PaymentID)
		if st == nil {
			continue
		}
		st.tag("takeover")
		st.add(b.ms(t.TakenAt), "boundary", "warn", "%s took the charge lease over (claim attempt %d)", t.Worker, t.Attempt)
	}
	charges := map[string]int{}
	for _, c := range b.s.PSPCallLog {
		st := b.byPayment(c.Reference)
		if st == nil {
			st = b.byKey(c.IdempotencyKey)
		}
		if st == nil {
			continue
		}
		level, text := pspText(c)
		if c.Outcome == "charged" || c.Outcome == "fail_after" { // fail_after charged, then lost the answer
			if charges[st.ID]++; charges[st.ID] > 1 {
				st.tag("double charge")
				level = "bad"
			}
		}
		switch c.Outcome {
		case "replayed":
			st.tag("psp replay")
		case "cancelled", "fail_after":
			st.tag("answer lost")
		}
		st.add(b.ms(c.ReceivedAt), "psp", level, "%s", text)
	}
	end := b.ms(b.start.Add(b.r.Span + b.r.Drain.Took))
	for _, g := range b.s.Boundary {
		st := b.byKey(strings.TrimSuffix(strings.TrimPrefix(g.Key, "idem:v1:{"), "}"))
		if st == nil {
			continue
		}
		level, state := "", "completed"
		if g.State == "P" {
			level, state = "bad", "PENDING, lease until "+g.Lease.UTC().Format("15:04:05.000")
		}
		if g.Attempt > 1 {
			st.tag("boundary retry")
		}
		st.add(end, "boundary", level, "after the drain: stage %s %s, attempt %d, owner %s", g.Stage, state, g.Attempt, orDash(g.Owner))
	}
}

// pspText is the level and the text of one psp call.
func pspText(c verify.PSPCall) (level, text string) {
	switch c.Outcome {
	case "charged":
		return "ok", fmt.Sprintf("psp charged %s (%d), amount %d", c.ChargeID, c.HTTPStatus, c.Amount)
	case "declined":
		return "", fmt.Sprintf("psp declined (%d)", c.HTTPStatus)
	case "replayed":
		return "warn", fmt.Sprintf("psp replayed %s: same key, the first answer again, no new charge", c.ChargeID)
	case "cancelled":
		return "warn", "psp call cancelled: the caller went away before the answer (answer lost)"
	case "fail_after":
		return "warn", fmt.Sprintf("psp charged %s, then dropped the answer (answer lost)", c.ChargeID)
	case "fail_before":
		return "warn", fmt.Sprintf("psp failed before charging (%d)", c.HTTPStatus)
	}
	return "bad", fmt.Sprintf("psp call: %s (%d)", c.Outcome, c.HTTPStatus)
}

func (b *builder) byPayment(id string) *Story {
	if id == "" {
		return nil
	}
	if sid, ok := b.byPay[id]; ok {
		return b.byID[sid]
	}
	return nil
}

// byKey finds the story of "<merchant>:<key>".
func (b *builder) byKey(scoped string) *Story {
	return b.byID[scoped]
}

// addLogs adds the services' log lines.
func (b *builder) addLogs(logs []LogLine) {
	for _, l := range logs {
		st := b.byKey(l.merchant() + ":" + l.Key)
		if st == nil {
			continue
		}
		level := ""
		switch l.Level {
		case "WARN":
			level = "warn"
		case "ERROR":
			level = "bad"
		}
		who := l.Instance
		if who == "" {
			who = l.Service
		}
		switch {
		case l.Service == "api" && l.Msg == "request":
			replayed := ""
			if l.Replayed != "" {
				replayed = ", replayed"
			}
			st.add(b.ms(l.Time), "api", level, "%s answered %v%s in %.1f ms", who, l.Status, replayed, l.DurationMS)
		case l.Service == "worker":
			detail := fmt.Sprintf("delivery %d", l.Attempt)
			if l.Redelivered {
				detail += ", redelivered"
				st.tag("redelivered")
			}
			if l.ClaimAttempt > 0 {
				detail += fmt.Sprintf(", claim attempt %d", l.ClaimAttempt)
			}
			if status, ok := l.Status.(string); ok && status != "" {
				detail += ", " + status
			}
			if l.Attempt > 1 {
				st.tag("worker retry")
			}
			why := l.Err + l.Cause
			if why != "" {
				why = ": " + why
			}
			st.add(b.ms(l.Time), "worker", level, "%s: %s (%s)%s", who, l.Msg, detail, why)
		default:
			st.add(b.ms(l.Time), l.Service, level, "%s: %s", who, l.Msg)
		}
	}
}

// addViolations marks the stories each violation names, by payment id,
// "<merchant>:<key>" or key.
func (b *builder) addViolations(vs []verify.Violation) {
	byKey := map[string][]*Story{}
	for _, st := range b.byID {
		byKey[st.Key] = append(byKey[st.Key], st)
	}
	for _, v := range vs {
		for _, id := range v.IDs {
			var hit []*Story
			if st := b.byPayment(id); st != nil {
				hit = append(hit, st)
			} else if st := b.byKey(id); st != nil {
				hit = append(hit, st)
			} else {
				hit = byKey[id]
			}
			for _, st := range hit {
				if !containsInt(st.Violated, v.Invariant) {
					st.Violated = append(st.Violated, v.Invariant)
					st.add(b.ms(b.start.Add(b.r.Span+b.r.Drain.Took)), "verify", "bad", "invariant %d violated (%s): %s", v.Invariant, v.Kind, v.Detail)
				}
			}
		}
	}
}

// stories returns at most max stories: those a violation names first, then
// those a fault hit in flight (a request, a psp answer, a lease), then those
// whose message a broker fault held up, then those with marks of trouble
// (takeovers, lost answers, redeliveries), then those retried; each with
// its events in time order; and how many there are in all.
func (b *builder) stories(max int) ([]Story, int) {
	rank := func(st *Story) int {
		switch {
		case len(st.Violated) > 0:
			return 0
		case b.direct[st.ID]:
			return 1
		case len(st.Faults) > 0:
			return 2
		}
		for _, t := range st.Tags {
			switch t {
			case "takeover", "cut off", "answer lost", "double charge", "psp replay", "redelivered", "worker retry", "republished":
				return 3
			}
		}
		for _, t := range st.Tags {
			if t == "retried" || t == "409" || t == "503" {
				return 4
			}
		}
		return 5
	}
	all := make([]*Story, 0, len(b.order))
	for _, id := range b.order {
		st := b.byID[id]
		sort.SliceStable(st.Events, func(i, j int) bool { return st.Events[i].AtMS < st.Events[j].AtMS })
		all = append(all, st)
	}
	sort.SliceStable(all, func(i, j int) bool { return rank(all[i]) < rank(all[j]) })
	out := make([]Story, 0, min(max, len(all)))
	for _, st := range all[:min(max, len(all))] {
		if st.Faults == nil {
			st.Faults = []int{}
		}
		if st.Violated == nil {
			st.Violated = []int{}
		}
		if st.Tags == nil {
			st.Tags = []string{}
		}
		out = append(out, *st)
	}
	return out, len(all)
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
