package history

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/oncepay/oncepay/loadtest/record"
)

// ErrNoFingerprint is returned by FromRecords for records written without
// the payload's fingerprint (by an older client): they cannot be checked.
var ErrNoFingerprint = errors.New("attempt records without a payload fingerprint")

// FromRecords groups the client's attempts by merchant:key into partitions,
// each closed by the final read that finals holds for its key (no row and
// no charges when finals has none). Partitions come sorted by key. It fails
// with ErrNoFingerprint if any attempt lacks its fingerprint.
func FromRecords(attempts []record.Attempt, finals map[string]Input) ([]Partition, error) {
	byKey := map[string]*Partition{}
	missing := 0
	for _, a := range attempts {
		if a.Fingerprint == "" {
			missing++
			continue
		}
		k := a.Merchant + ":" + a.Key
		p := byKey[k]
		if p == nil {
			p = &Partition{Key: k}
			byKey[k] = p
		}
		p.Ops = append(p.Ops, Op{
			Client: client(a),
			Start:  a.Time(),
			End:    a.EndTime(),
			In:     Input{Key: k, Fingerprint: a.Fingerprint, Amount: a.Amount},
			Out:    outputOf(a),
		})
	}
	if missing > 0 {
		return nil, fmt.Errorf("%w: %d of %d", ErrNoFingerprint, missing, len(attempts))
	}
	parts := make([]Partition, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		p := byKey[k]
		p.Final = finals[k]
		p.Final.Key, p.Final.Final = k, true
		parts = append(parts, *p)
	}
	return parts, nil
}

// client names the sender of a: its VU, and its copy in an http.batch.
func client(a record.Attempt) string {
	if a.Copy > 0 {
		return fmt.Sprintf("vu%d.%d", a.VU, a.Copy)
	}
	return fmt.Sprintf("vu%d", a.VU)
}

// outputOf maps how an attempt ended to what it tells the model. Refused
// attempts were never sent; cut-off, timed-out and other transport errors
// and every 5xx (503 included) may or may not have taken effect.
func outputOf(a record.Attempt) Output {
	o := Output{Status: a.Status}
	switch a.Class {
	case record.ClassOK:
		o.Answer, o.PaymentID, o.BodySHA256, o.Replayed = AnswerOK, a.PaymentID, a.BodySHA256, a.Replayed
	case record.ClassConflict:
		o.Answer = AnswerBusy
	case record.ClassMismatch:
		o.Answer = AnswerMismatch
	case record.ClassClientError, record.ClassRefused:
		o.Answer = AnswerNoEffect
	default: // cut off, timeout, transport, 503, other 5xx
		o.Answer = AnswerAmbiguous
	}
	return o
}
