package conform

// Level is how strongly the draft asks for a rule.
type Level string

// The levels. Profile rules are what oncepay chooses where the draft is
// silent or leaves the choice open; they do not decide Report.OK.
const (
	MUST    Level = "MUST"
	SHOULD  Level = "SHOULD"
	Profile Level = "profile"
)

// Result is a row's verdict.
type Result string

// The verdicts. NA: the target gave no way to check the rule.
const (
	Pass Result = "pass"
	Fail Result = "fail"
	NA   Result = "n/a"
)

// Row is one rule's verdict with its evidence.
type Row struct {
	ID       string     `json:"id"`      // short and stable: key-required, replay...
	Section  string     `json:"section"` // of the draft, e.g. "2.7"
	Level    Level      `json:"level"`
	Rule     string     `json:"rule"`
	Result   Result     `json:"result"`
	Detail   string     `json:"detail"` // why, in one sentence
	Evidence []Exchange `json:"evidence,omitempty"`
	Effects  []string   `json:"effects,omitempty"` // effect reads: "key (a): 1"
}

// Decides reports whether the row counts toward Report.OK.
func (r Row) Decides() bool { return r.Level != Profile && r.Result != NA }

// Failed reports whether the row failed at a deciding level.
func (r Row) Failed() bool { return r.Decides() && r.Result == Fail }
