package charge

// Outcome classifies one call to POST /v1/charges in the ledger.
type Outcome string

// The outcomes of a call. Only OutcomeCharged and OutcomeFailAfter create an
// effective charge.
const (
	OutcomeCharged    Outcome = "charged"     // new charge, answered 201
	OutcomeDeclined   Outcome = "declined"    // new decline, answered 402
	OutcomeReplayed   Outcome = "replayed"    // same key and payload as an earlier call: its answer again
	OutcomeMismatch   Outcome = "mismatch"    // same key, different payload: 422
	OutcomeFailBefore Outcome = "fail_before" // injected 503 before charging
	OutcomeFailAfter  Outcome = "fail_after"  // charged, then the connection was dropped without an answer
	OutcomeError      Outcome = "error"       // 500 without charging (injected, or a real internal error)
	OutcomeInvalid    Outcome = "invalid"     // rejected with 4xx before anything else happened
	OutcomeCancelled  Outcome = "cancelled"   // the caller went away during the simulated latency; nothing charged
	OutcomeRejected   Outcome = "rejected"    // injected permanent rejection (reject_rate): 400, stored under the key; nothing charged
)

// Outcomes lists every outcome, in the order above.
func Outcomes() []Outcome {
	return []Outcome{
		OutcomeCharged, OutcomeDeclined, OutcomeReplayed, OutcomeMismatch,
		OutcomeFailBefore, OutcomeFailAfter, OutcomeError, OutcomeInvalid, OutcomeCancelled,
		OutcomeRejected,
	}
}
