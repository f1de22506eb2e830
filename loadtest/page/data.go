package page

// Data is what the page shows. Times are milliseconds since the start of
// the load (Report.Start).
type Data struct {
	Kind    string `json:"kind"` // "run", or "compare" for make compare's page
	RunID   string `json:"run_id"`
	Pass    bool   `json:"pass"`
	Verdict string `json:"verdict"`  // PASS, or FAIL with the number of violations
	StartMS int64  `json:"start_ms"` // the start of the load, ms since the Unix epoch
	SpanMS  int64  `json:"span_ms"`
	// Summary is the run in a few labelled lines (requests, payments, psp,
	// drain, boundary).
	Summary    []Fact      `json:"summary"`
	Invariants []Invariant `json:"invariants"`
	Series     Series      `json:"series"`
	Faults     []Fault     `json:"faults"`
	Stories    []Story     `json:"stories"`
	// StoriesTotal is how many stories the run has; Omitted how many of
	// them the page leaves out (Options.MaxStories).
	StoriesTotal int    `json:"stories_total"`
	Omitted      int    `json:"omitted"`
	Links        []Link `json:"links"`
	Repro        string `json:"repro,omitempty"`
	// Strategies are the columns of make compare's page (Kind "compare").
	Strategies []Strategy `json:"strategies,omitempty"`
}

// Fact is one labelled line of the summary.
type Fact struct {
	Label string `json:"label"`
	Text  string `json:"text"`
}

// Invariant is one checked invariant with its evidence.
type Invariant struct {
	N          int         `json:"n"`
	Text       string      `json:"text"`
	OK         bool        `json:"ok"`
	Checked    bool        `json:"checked"` // false: not checked in this run (invariant 6 without faults)
	Evidence   string      `json:"evidence"`
	Violations []Violation `json:"violations"`
}

// Violation is one broken invariant, with the stories it names.
type Violation struct {
	Kind   string   `json:"kind"`
	Detail string   `json:"detail"`
	IDs    []string `json:"ids"`
}

// Series are per-second values, index i covering [i s, i+1 s) of the load.
type Series struct {
	OK        []float64 `json:"ok"`        // 2xx answers
	Errors    []float64 `json:"errors"`    // transport errors and 5xx
	Retries   []float64 `json:"retries"`   // attempts after the first of their request
	Conflicts []float64 `json:"conflicts"` // 409: the key in flight
	Settled   []float64 `json:"settled"`   // payments that reached succeeded or failed
	// P50, P95 and P99 are the latency percentiles of the attempts that
	// started in the second and got an answer, in ms (0: none).
	P50 []float64 `json:"p50"`
	P95 []float64 `json:"p95"`
	P99 []float64 `json:"p99"`
}

// Fault is one fault of the run and what it hit.
type Fault struct {
	Seq      int    `json:"seq"`
	AtMS     int64  `json:"at_ms"`
	Label    string `json:"label"`  // kill api-1, flush-redis
	Action   string `json:"action"` // picks the colour
	Text     string `json:"text"`   // what the driver saw: pid, in flight, evidence
	Hit      string `json:"hit,omitempty"`
	InFlight int    `json:"in_flight"`
	Frozen   bool   `json:"frozen"`
	Landed   bool   `json:"landed"`
	TookMS   int64  `json:"took_ms"`
	// CutOff and Takeovers are counted in the fault's window (verify's
	// fault rows); Stories are the ids of the stories it hit.
	CutOff    int      `json:"cut_off"`
	Takeovers int      `json:"takeovers"`
	Stories   []string `json:"stories"`
	// Recovered is the matrix's "recovered in" cell (verify.Recovery.Cell);
	// BackMS when goodput was back (0: not measured or never), NeverMS
	// when its bound ran out without it (0 otherwise); Why why it was not
	// measured.
	Recovered string `json:"recovered"`
	BackMS    int64  `json:"back_ms,omitempty"`
	NeverMS   int64  `json:"never_ms,omitempty"`
	Why       string `json:"why,omitempty"`
}

// Story is everything that happened to one idempotency key of one
// merchant, in time order.
type Story struct {
	ID        string `json:"id"`         // merchant:key
	PaymentID string `json:"payment_id"` // empty when no payment was created
	Merchant  string `json:"merchant"`
	Key       string `json:"key"`
	Amount    int64  `json:"amount"`
	Status    string `json:"status"` // the payment's final status; "none" without a payment
	// Faults are the seqs of the faults that hit it; Violated the
	// invariants whose violations name it; Tags short marks for the list
	// (cut off, takeover, replayed, 409, answer lost, ...).
	Faults   []int    `json:"faults"`
	Violated []int    `json:"violated"`
	Tags     []string `json:"tags"`
	Events   []Event  `json:"events"`
}

// Event is one thing that happened to a key.
type Event struct {
	AtMS int64 `json:"t"`
	// Src is where it happened: client, api, db, outbox, worker, psp,
	// boundary, fault.
	Src   string `json:"src"`
	Text  string `json:"text"`
	Level string `json:"level,omitempty"` // "", ok, warn, bad
}

// Link is a file of the run the page links to.
type Link struct {
	Name string `json:"name"`
	Href string `json:"href"`
}

// Strategy is one column of make compare's page.
type Strategy struct {
	Name    string `json:"name"`
	Pass    bool   `json:"pass"`
	Verdict string `json:"verdict"`
	Href    string `json:"href"` // its run's report.html, relative to the page
	// Facts are its row of the comparison table, by label.
	Facts []Fact `json:"facts"`
	// Stories are the ids (in Data.Stories) of the payments it
	// double-charged or lost.
	Stories []string `json:"stories"`
}
