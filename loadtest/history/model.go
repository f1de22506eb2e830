package history

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Answer is what an attempt's answer tells the model.
type Answer string

// The answers. Busy and NoEffect answers are allowed in every state and
// change nothing; Ambiguous ones may or may not have taken effect.
const (
	AnswerOK        Answer = "ok"        // 2xx: a first success or a replay
	AnswerBusy      Answer = "busy"      // 409: the key is in flight
	AnswerMismatch  Answer = "mismatch"  // 422: the key holds another payload
	AnswerNoEffect  Answer = "no_effect" // another 4xx, or refused before it was sent
	AnswerAmbiguous Answer = "ambiguous" // cut off, timed out, transport error, 5xx
)

// Input is what one operation asked. An attempt carries the fingerprint of
// the payload it sent; the final read carries what the system of record
// holds for the key after the drain.
type Input struct {
	Key         string // merchant:key
	Final       bool   // the final read, not an HTTP attempt
	Fingerprint string // attempt: the payload's fingerprint (idem.Fingerprint)
	Amount      int64  // attempt: the amount sent
	Row         *Row   // final: the payment row, nil when there is none
	Charges     []Charge
}

// Output is what one attempt was answered. The final read has none.
type Output struct {
	Answer     Answer
	Status     int    // HTTP status, 0 without an answer
	PaymentID  string // 2xx: the payment id in the body
	BodySHA256 string // 2xx: hex SHA-256 of the body
	Replayed   bool   // 2xx: Idempotent-Replayed: true
}

// Row is the payment row of a key, as the final read found it.
type Row struct {
	ID             string
	Fingerprint    string // request_fingerprint
	Amount         int64
	Status         string // pending, succeeded, failed
	ResponseSHA256 string // hex SHA-256 of the stored first answer
}

// Charge is one effective psp charge for the key's payment.
type Charge struct {
	ID     string
	Amount int64
}

// state is what the server has accepted for one key: nothing, or one
// payload (its fingerprint and the amount the client sent) with its payment
// id and first answer. ID and Body are empty while the acceptance is known
// only from an ambiguous attempt whose answer nobody saw; the first answer
// seen binds them.
type state struct {
	Accepted    bool
	Fingerprint string
	Amount      int64
	ID          string
	Body        string
}

// step is the sequential contract of POST /v1/payments for one key, plus
// the final read: it returns every state the operation can lead to from s,
// none if the operation is impossible in s.
func step(s state, in Input, out Output) []state {
	if in.Final {
		if finalOK(s, in) {
			return []state{s}
		}
		return nil
	}
	// A claim on the key is not an acceptance: a request whose holder died
	// before committing its payment leaves nothing accepted, its claim is
	// taken over by the next request whatever its payload, and that payload
	// may succeed. Hence acceptance happens only through a 2xx or an
	// ambiguous attempt that took effect (then the final read shows its
	// row), and a 422 needs an accepted payload with another fingerprint.
	// A 409 is legal in every state here; how long a key may answer it is
	// a liveness question, not the model's.
	switch out.Answer {
	case AnswerBusy, AnswerNoEffect:
		return []state{s}
	case AnswerAmbiguous:
		if s.Accepted {
			return []state{s}
		}
		return []state{s, {Accepted: true, Fingerprint: in.Fingerprint, Amount: in.Amount}}
	case AnswerMismatch:
		if s.Accepted && s.Fingerprint != in.Fingerprint {
			return []state{s}
		}
		return nil // 422 on a key that holds this payload, or nothing
	case AnswerOK:
		if !s.Accepted {
			if out.Replayed {
				return nil // a replay of an answer never given
			}
			return []state{{Accepted: true, Fingerprint: in.Fingerprint, Amount: in.Amount, ID: out.PaymentID, Body: out.BodySHA256}}
		}
		if s.Fingerprint != in.Fingerprint || s.Amount != in.Amount || !out.Replayed ||
			(s.ID != "" && s.ID != out.PaymentID) || (s.Body != "" && s.Body != out.BodySHA256) {
			return nil
		}
		return []state{{Accepted: true, Fingerprint: s.Fingerprint, Amount: s.Amount, ID: out.PaymentID, Body: out.BodySHA256}}
	}
	return nil
}

// finalOK reports whether the system of record can hold in.Row and
// in.Charges after the key reached s: no row for nothing accepted; the
// accepted payload's row (its fingerprint and the amount the client sent),
// id and first answer otherwise; at most one charge, of the row's amount;
// succeeded exactly when there is one, failed without.
func finalOK(s state, in Input) bool {
	if in.Row == nil {
		return !s.Accepted && len(in.Charges) == 0
	}
	r := in.Row
	if !s.Accepted || r.Fingerprint != s.Fingerprint || r.Amount != s.Amount ||
		(s.ID != "" && r.ID != s.ID) || (s.Body != "" && r.ResponseSHA256 != s.Body) {
		return false
	}
	if len(in.Charges) > 1 || (len(in.Charges) == 1 && in.Charges[0].Amount != r.Amount) {
		return false
	}
	switch r.Status {
	case "succeeded":
		return len(in.Charges) == 1
	case "failed":
		return len(in.Charges) == 0
	}
	return true // pending: invariant 4 judges it
}

// Model is the porcupine model of one key's history (Step is step).
// Histories of several keys are partitioned by Input.Key.
func Model() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partition,
		Init:      func() []any { return []any{state{}} },
		Step: func(s, in, out any) []any {
			var o Output
			if out != nil {
				o = out.(Output)
			}
			next := step(s.(state), in.(Input), o)
			res := make([]any, len(next))
			for i, n := range next {
				res[i] = n
			}
			return res
		},
		DescribeOperation: func(in, out any) string {
			var o Output
			if out != nil {
				o = out.(Output)
			}
			return Describe(in.(Input), o)
		},
		DescribeState: func(s any) string { return describeState(s.(state)) },
	}
	return nm.ToModel()
}

func partition(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range ops {
		k := op.Input.(Input).Key
		i, ok := byKey[k]
		if !ok {
			i = len(parts)
			byKey[k] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// Describe is one operation on one line.
func Describe(in Input, out Output) string {
	if in.Final {
		var b strings.Builder
		fmt.Fprintf(&b, "final read of %s: ", in.Key)
		if in.Row == nil {
			b.WriteString("no payment row")
		} else {
			fmt.Fprintf(&b, "row %s %s amount %d fp %s answer %s", in.Row.ID, in.Row.Status, in.Row.Amount,
				short(in.Row.Fingerprint), short(in.Row.ResponseSHA256))
		}
		fmt.Fprintf(&b, ", %d charge(s)", len(in.Charges))
		for _, c := range in.Charges {
			fmt.Fprintf(&b, " %s %d", c.ID, c.Amount)
		}
		return b.String()
	}
	s := fmt.Sprintf("POST fp %s amount %d -> ", short(in.Fingerprint), in.Amount)
	switch out.Answer {
	case AnswerOK:
		r := ""
		if out.Replayed {
			r = " replayed"
		}
		return s + fmt.Sprintf("%d %s body %s%s", out.Status, out.PaymentID, short(out.BodySHA256), r)
	case AnswerAmbiguous:
		if out.Status != 0 {
			return s + fmt.Sprintf("%d (unknown outcome)", out.Status)
		}
		return s + "no answer (unknown outcome)"
	case AnswerNoEffect:
		if out.Status == 0 {
			return s + "refused (not sent)"
		}
	}
	return s + fmt.Sprint(out.Status)
}

func describeState(s state) string {
	if !s.Accepted {
		return "nothing accepted"
	}
	return fmt.Sprintf("accepted fp %s amount %d id %s answer %s", short(s.Fingerprint), s.Amount, orUnknown(s.ID), short(s.Body))
}

func short(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return orUnknown(h)
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}
