package compare

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/oncepay/oncepay/loadtest/record"
	"github.com/oncepay/oncepay/loadtest/verify"
)

// Column groups the verifier's violation kinds for the table.
type Column string

// The table's violation columns, in order.
const (
	DoubleCharges     Column = "double charges"
	PaymentsLost      Column = "payments lost"
	MismatchedReplays Column = "mismatched replays"
	StuckRecords      Column = "stuck records"
	Other             Column = "other violations"
)

// Columns returns the violation columns in table order.
func Columns() []Column {
	return []Column{DoubleCharges, PaymentsLost, MismatchedReplays, StuckRecords, Other}
}

// columnOf files each verifier kind under one column. A kind not listed is
// Other.
var columnOf = map[string]Column{
	verify.KindDoubleCharge:      DoubleCharges, // a payment or key charged more than once
	verify.KindFailedCharged:     DoubleCharges, // failed, yet charged: money taken for nothing
	verify.KindLostPayment:       PaymentsLost,  // 2xx without a payment row
	verify.KindStuckPending:      PaymentsLost,  // accepted, never charged nor dead-lettered
	verify.KindNoOutbox:          PaymentsLost,  // no message was ever sent for it
	verify.KindUnpublishedOutbox: PaymentsLost,  // its message never left the outbox
	verify.KindReplayDiffers:     MismatchedReplays,
	verify.KindStoredDiffers:     MismatchedReplays,
	verify.KindKeyManyPayments:   MismatchedReplays, // one key answered with several payments
	verify.KindAmountDiffers:     MismatchedReplays, // answered with a payment of another amount
	verify.KindWrongPayment:      MismatchedReplays, // answered with a payment of another key
	verify.KindDuplicatePayments: MismatchedReplays,
	verify.KindStaleBoundary:     StuckRecords, // a boundary stage pending past its lease
}

// ColumnOf returns the column a verifier violation kind counts in.
func ColumnOf(kind string) Column {
	if c, ok := columnOf[kind]; ok {
		return c
	}
	return Other
}

// Row is one strategy's line of the table.
type Row struct {
	Strategy string `json:"strategy"`
	RunID    string `json:"run_id"`
	// Postgres is a Postgres row's replication (Postgres.Label); empty for
	// a strategy's row, which runs on the runtime's Postgres.
	Postgres string `json:"postgres,omitempty"`
	// Counts holds the violation columns: violations of the verifier
	// (one per payment or key), plus in StuckRecords the payments parked in
	// the dead-letter queue and the naive strategies' markers left in Redis.
	Counts map[Column]int `json:"counts"`
	// Kinds counts the verifier's violations by kind, for the details.
	Kinds map[string]int `json:"kinds"`
	// DeadLettered and Markers are the parts of StuckRecords that are not
	// verifier violations.
	DeadLettered int `json:"dead_lettered"`
	Markers      int `json:"markers_left"`
	// Accepted is the number of distinct payments the client got a 2xx
	// for; AcceptedPerSecond divides it by the load's duration.
	Accepted          int     `json:"accepted"`
	AcceptedPerSecond float64 `json:"accepted_per_second"`
	// P99 is the 99th percentile of the latency of answered HTTP attempts
	// (transport errors excluded).
	P99 time.Duration `json:"p99_ns"`
	// GaveUp counts logical requests the client gave up on (its retry
	// budget ran out).
	GaveUp int `json:"gave_up"`
	// CutOff and Takeovers say whether the faults landed (invariant 6).
	CutOff    int `json:"cut_off"`
	Takeovers int `json:"takeovers"`
	// Pass is the verifier's verdict.
	Pass bool `json:"pass"`
	// Histories is invariant 7's verdict on the clients' histories: ok,
	// FAIL or UNKNOWN with the number of keys, "not checked", or "-" for a
	// report without it. Its violations are not in Counts.
	Histories string `json:"histories"`
	// IllegalHistories counts the keys whose history failed invariant 7.
	IllegalHistories int `json:"illegal_histories"`
}

// Summarize builds strategy's row from its run's report and client
// records. markers is the number of naive-strategy markers still in Redis
// after the drain; load is the load's duration.
func Summarize(strategy string, r verify.Report, attempts []record.Attempt, markers int, load time.Duration) Row {
	row := Row{
		Strategy: strategy, RunID: r.RunID, Counts: map[Column]int{}, Kinds: map[string]int{},
		DeadLettered: r.Payments.DeadLettered, Markers: markers, Pass: r.Pass,
		GaveUp: r.Requests.ByOutcome[record.OutcomeGaveUp], CutOff: r.Requests.CutOff, Takeovers: len(r.Takeovers),
	}
	if p, ok := PostgresRow(strategy); ok {
		row.Postgres = p.Label()
	}
	for _, c := range Columns() {
		row.Counts[c] = 0
	}
	for _, v := range r.Violations {
		row.Kinds[v.Kind]++
		if v.Invariant != 7 { // the histories column; a key there also broke a counted invariant, or only its history
			row.Counts[ColumnOf(v.Kind)]++
		}
	}
	row.Histories = histories(r.History)
	row.IllegalHistories = len(r.History.Violations)
	row.Counts[StuckRecords] += r.Payments.DeadLettered + markers

	accepted := map[string]bool{}
	var latencies []float64
	for _, a := range attempts {
		if a.Is2xx() && a.PaymentID != "" {
			accepted[a.PaymentID] = true
		}
		if a.Status != 0 {
			latencies = append(latencies, a.DurationMS)
		}
	}
	row.Accepted = len(accepted)
	if load > 0 {
		row.AcceptedPerSecond = float64(row.Accepted) / load.Seconds()
	}
	row.P99 = time.Duration(percentile(latencies, 0.99) * float64(time.Millisecond))
	return row
}

// histories is invariant 7's cell.
func histories(h verify.History) string {
	switch {
	case h.Unchecked != "":
		return "not checked"
	case h.Verdict == "":
		return "-"
	case len(h.Violations) == 0:
		return fmt.Sprintf("ok (%d keys)", h.Partitions)
	}
	return fmt.Sprintf("%s (%d of %d keys)", strings.ToUpper(string(h.Verdict)), len(h.Violations), h.Partitions)
}

// Violations is the sum of the violation columns.
func (r Row) Violations() int {
	n := 0
	for _, v := range r.Counts {
		n += v
	}
	return n
}

// Verdict says what the run showed: the violations it caught (invariant
// 7's as the number of key histories that failed), or that it caught
// none, which is not a proof of safety. A run in which no fault landed
// proves nothing when it caught nothing; what it did catch is still
// caught, and the verdict says no fault landed.
func (r Row) Verdict() string {
	unlanded := r.Kinds[verify.KindNothingLanded] > 0
	n, h := r.Violations(), r.IllegalHistories
	if unlanded && r.Counts[ColumnOf(verify.KindNothingLanded)] > 0 {
		n -= r.Kinds[verify.KindNothingLanded] // the verifier's note, not a violation of the strategy
	}
	var v string
	switch {
	case n > 0 && h > 0:
		v = fmt.Sprintf("CAUGHT: %d violation(s), %d key histories", n, h)
	case n > 0:
		v = fmt.Sprintf("CAUGHT: %d violation(s)", n)
	case h > 0:
		v = fmt.Sprintf("CAUGHT: %d key histories", h)
	case unlanded:
		return "run proved nothing: no fault landed"
	default:
		return "not caught this run"
	}
	if unlanded {
		v += " (no fault landed)"
	}
	return v
}

// KindsText lists the verifier kinds of r, most frequent first, e.g.
// "double_charge 12, stuck_pending 3".
func (r Row) KindsText() string {
	kinds := slices.Collect(maps.Keys(r.Kinds))
	sort.Slice(kinds, func(i, j int) bool {
		if r.Kinds[kinds[i]] != r.Kinds[kinds[j]] {
			return r.Kinds[kinds[i]] > r.Kinds[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	s := ""
	for i, k := range kinds {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, r.Kinds[k])
	}
	if r.DeadLettered > 0 {
		s += sep(s) + fmt.Sprintf("dead-lettered %d", r.DeadLettered)
	}
	if r.Markers > 0 {
		s += sep(s) + fmt.Sprintf("markers left %d", r.Markers)
	}
	if s == "" {
		return "none"
	}
	return s
}

func sep(s string) string {
	if s == "" {
		return ""
	}
	return ", "
}

// percentile returns the q-quantile of xs (nearest rank); 0 for none.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
