package verify

import (
	"time"

	"github.com/oncepay/oncepay/loadtest/fault"
	"github.com/oncepay/oncepay/loadtest/record"
)

// Report is the verdict on one run.
type Report struct {
	RunID string    `json:"run_id"`
	Pass  bool      `json:"pass"` // no violation
	Start time.Time `json:"start"`
	// Span is the time from the first to the last client attempt.
	Span      time.Duration `json:"span_ns"`
	Requests  Requests      `json:"requests"`
	Payments  Payments      `json:"payments"`
	PSP       PSP           `json:"psp"`
	Faults    []Fault       `json:"faults"`
	Takeovers []Takeover    `json:"takeovers"`
	Drain     DrainResult   `json:"drain"`
	Queues    []Queue       `json:"queues"`
	// DeadLetter lists the dead-lettered messages of this run's payments
	// (each a violation of invariant 4); EarlierDeadLetters counts the
	// other messages in the dead-letter queue (earlier runs on the same
	// runtime), which are not judged.
	DeadLetter         []DeadLetter `json:"dead_letters"`
	EarlierDeadLetters int          `json:"dead_letters_earlier"`
	Boundary           Boundary     `json:"boundary"`
	History            History      `json:"history"` // invariant 7
	// K6 is how the load generator ended (the caller adds it: AddK6); nil
	// when not known.
	K6 *K6 `json:"k6,omitempty"`
	// Repro is the command that reruns the same load and fault plan; the
	// caller sets it (Check cannot know how the run was started).
	Repro      string      `json:"repro,omitempty"`
	Violations []Violation `json:"violations"`
	// Matrix has one row per fault: where it landed, what it hit and the
	// violations of payments created in its window.
	Matrix []FaultRow `json:"matrix"`
}

// Requests counts what the client did and saw.
type Requests struct {
	Logical    int                    `json:"logical"`  // logical requests (payments asked for, replays, probes)
	Attempts   int                    `json:"attempts"` // HTTP attempts, retries included
	Retries    int                    `json:"retries"`  // attempts after the first of their request
	ByClass    map[record.Class]int   `json:"by_class"`
	ByOutcome  map[record.Outcome]int `json:"by_outcome"`
	ByScenario map[string]int         `json:"by_scenario"` // logical requests
	Replays    int                    `json:"replays"`     // 2xx answers with Idempotent-Replayed: true
	Conflicts  int                    `json:"conflicts"`   // 409: the key was in flight
	Mismatches int                    `json:"mismatches"`  // 422: the key was reused for another payload
	// CutOff counts attempts cut off in flight (sent, then the connection
	// broke), by the replica they were sent to; Refused those that found
	// no server.
	CutOff         int            `json:"cut_off"`
	CutOffByTarget map[string]int `json:"cut_off_by_target"`
	Refused        int            `json:"refused"`
	Timeouts       int            `json:"timeouts"`
}

// Payments counts the run's payment rows.
type Payments struct {
	Total        int `json:"total"`
	Succeeded    int `json:"succeeded"`
	Failed       int `json:"failed"`
	Pending      int `json:"pending"`
	DeadLettered int `json:"dead_lettered"` // with a message in the dead-letter queue, whatever their status: violations
}

// PSP compares calls to the provider with effective charges.
type PSP struct {
	Calls     int            `json:"calls"`
	ByOutcome map[string]int `json:"by_outcome"`
	Charges   int            `json:"charges"`
}

// Fault is one fault of the run, timed from the start of the load.
type Fault struct {
	fault.Event
	At time.Duration `json:"at_ns"`
}

// Boundary counts the run's boundary records.
type Boundary struct {
	Records      int `json:"records"`
	Completed    int `json:"completed"`     // stages completed
	PendingLive  int `json:"pending_live"`  // stages pending with a live lease
	PendingStale int `json:"pending_stale"` // stages pending past their lease: violations
}

// Violation is one broken invariant.
type Violation struct {
	Invariant int      `json:"invariant"` // as numbered in docs/demo.md; 0 for k6's thresholds
	Kind      string   `json:"kind"`
	Detail    string   `json:"detail"`
	IDs       []string `json:"ids"`
}

// The kinds of violation, by invariant.
const (
	KindLostPayment       = "lost_payment"           // 1: a 2xx with no payment row
	KindWrongPayment      = "wrong_payment"          // 1: the row belongs to another merchant or key
	KindAmountDiffers     = "amount_differs"         // 1: the row's amount is not the one the client sent
	KindDuplicatePayments = "duplicate_payments"     // 2: more than one row for a key
	KindKeyManyPayments   = "key_many_payments"      // 2: one key answered with different payment ids
	KindReplayDiffers     = "replay_differs"         // 2: answers to one key are not byte-identical
	KindStoredDiffers     = "stored_answer_differs"  // 2: an answer differs from the stored first response
	KindDoubleCharge      = "double_charge"          // 3: more than one effective charge for a payment or key
	KindUnknownCharge     = "charge_unknown_payment" // 3: a charge whose reference is no payment
	KindSucceededNoCharge = "succeeded_not_charged"  // 3: succeeded without a charge
	KindChargeAmount      = "charge_amount_differs"  // 3: the charge's amount or currency is not the payment's
	KindFailedCharged     = "failed_but_charged"     // 3: failed, yet charged
	KindChargeIDDiffers   = "charge_id_differs"      // 3: psp_charge_id is not the charge's id
	KindStuckPending      = "stuck_pending"          // 4: pending after the drain (not dead-lettered: that is KindDeadLettered)
	KindStaleBoundary     = "stale_boundary"         // 5: a stage pending past its lease
	KindUnpublishedOutbox = "unpublished_outbox"     // 5: an outbox row never confirmed
	KindNoOutbox          = "no_outbox_row"          // 5: a payment without an outbox row
	KindNothingLanded     = "no_fault_landed"        // 6: no cut-off request, no takeover, no fault seen frozen mid-work
	KindPendingCharged    = "pending_but_charged"    // 3: pending after the drain, yet charged at the psp
	KindDeadLettered      = "dead_lettered"          // 4: a payment of the run has a message in the dead-letter queue
	KindDetectorsDisagree = "landing_unconfirmed"    // 6: the driver cut a request off, the client saw no cut-off
	KindFaultMissed       = "fault_missed"           // 6: a fault that did not land where it was aimed (Snapshot.RequireLanded)
	KindNotLinearizable   = "not_linearizable"       // 7: a key's history fits no order of the model
	KindHistoryUnknown    = "history_check_timeout"  // 7: the check of a key's history ran out of time
	KindHistoryUnchecked  = "history_unchecked"      // 7: the records cannot be checked (no fingerprints)
)
