package conform

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// The model of an idempotent create, generalised from oncepay's payment
// model (loadtest/history): a key holds nothing, a claim by one payload
// with no durable effect yet, or the one accepted payload with its first
// answer. The rules:
//
//   - the first accepted payload wins; a 2xx for another payload is illegal;
//   - every 2xx for the accepted payload has the same body bytes;
//   - 422 only once another payload holds the key (accepted or claimed);
//   - a claim with no durable effect may be taken over by any payload;
//   - 409, 429, other 4xx: nothing happened;
//   - an attempt without an answer, or with a 5xx, is ambiguous: it may have
//     taken effect, claimed the key, or done nothing, until the final read;
//   - the final read (the effect reader's count) equals the model's effects.
//
// It should converge with loadtest/history's payment model, which encodes
// the same rules on payment fields and psp charges.

// answer classes of an attempt.
const (
	ansOK        = "ok"
	ansMismatch  = "mismatch"
	ansNoEffect  = "no_effect"
	ansAmbiguous = "ambiguous"
)

// modelInput is one operation: an attempt with its payload's fingerprint,
// or the final read.
type modelInput struct {
	Key     string
	Final   bool
	Payload string // attempt: fingerprint of the body sent
}

// modelOutput is what the operation saw.
type modelOutput struct {
	Class   string // attempt: ok, mismatch, no_effect, ambiguous
	Status  int
	Body    string // ok: fingerprint of the body
	Effects int    // final: the count, -1 when the target cannot say
}

// modelState is one key's state.
type modelState struct {
	Claim   string // payload holding a claim with no durable effect
	Payload string // accepted payload, "" while none
	Body    string // its answer's fingerprint, "" while unseen
	Effects int
}

func step(s modelState, in modelInput, out modelOutput) []modelState {
	if in.Final {
		if out.Effects < 0 || out.Effects == s.Effects {
			return []modelState{s}
		}
		return nil
	}
	switch out.Class {
	case ansOK:
		switch {
		case s.Payload == "":
			return []modelState{{Payload: in.Payload, Body: out.Body, Effects: 1}}
		case s.Payload != in.Payload:
			return nil
		case s.Body == "" || s.Body == out.Body:
			s.Body = out.Body
			return []modelState{s}
		}
		return nil
	case ansMismatch:
		if (s.Payload != "" && s.Payload != in.Payload) || (s.Payload == "" && s.Claim != "" && s.Claim != in.Payload) {
			return []modelState{s}
		}
		return nil
	case ansAmbiguous:
		next := []modelState{s}
		if s.Payload == "" {
			next = append(next, modelState{Payload: in.Payload, Effects: 1}, modelState{Claim: in.Payload})
		}
		return next
	}
	return []modelState{s} // no_effect
}

// idemModel is the porcupine model, one partition per key.
func idemModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range history {
				k := op.Input.(modelInput).Key
				if _, ok := byKey[k]; !ok {
					order = append(order, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, k := range order {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() []any { return []any{modelState{}} },
		Step: func(state, input, output any) []any {
			next := step(state.(modelState), input.(modelInput), output.(modelOutput))
			out := make([]any, len(next))
			for i, s := range next {
				out[i] = s
			}
			return out
		},
		Equal: func(a, b any) bool { return a.(modelState) == b.(modelState) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(modelInput), output.(modelOutput)
			if in.Final {
				return fmt.Sprintf("final read: %d effects", out.Effects)
			}
			s := fmt.Sprintf("payload %s -> %s", in.Payload, out.Class)
			if out.Status != 0 {
				s += fmt.Sprintf(" %d", out.Status)
			}
			if out.Body != "" {
				s += " body " + out.Body
			}
			return s
		},
		DescribeState: func(state any) string {
			s := state.(modelState)
			switch {
			case s.Payload != "":
				return fmt.Sprintf("accepted %s (body %s), %d effect", s.Payload, s.Body, s.Effects)
			case s.Claim != "":
				return "claimed by " + s.Claim
			}
			return "empty"
		},
	}
	return nm.ToModel()
}

// classify maps an attempt's answer to its class.
func classify(ex Exchange) string {
	switch {
	case ex.Status == 0 || ex.Status >= 500:
		return ansAmbiguous
	case is2xx(ex.Status):
		return ansOK
	case ex.Status == 422:
		return ansMismatch
	}
	return ansNoEffect
}

// Verdict is the history check's result.
type Verdict struct {
	Result      string   `json:"result"` // ok, illegal or unknown (timed out)
	Operations  int      `json:"operations"`
	Keys        int      `json:"keys"`
	FailingKeys []string `json:"failing_keys,omitempty"`
	// Diagnosis counts the failing keys per reason their answers show
	// ("another payload got the same 2xx answer": 5).
	Diagnosis map[string]int `json:"diagnosis,omitempty"`
	Took      time.Duration  `json:"took_ns"`
	info      porcupine.LinearizationInfo
	failing   []porcupine.Operation
}

// checkHistory checks ops with the model within timeout.
func checkHistory(ops []porcupine.Operation, timeout time.Duration) Verdict {
	m := idemModel()
	t0 := time.Now()
	res, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	v := Verdict{Result: string(res), Operations: len(ops), Took: time.Since(t0), info: info}
	keys := map[string]bool{}
	for _, op := range ops {
		keys[op.Input.(modelInput).Key] = true
	}
	v.Keys = len(keys)
	if res == porcupine.Ok {
		return v
	}
	// Find the failing keys: check each partition alone.
	for _, part := range m.Partition(ops) {
		if porcupine.CheckOperationsTimeout(m, part, timeout) != porcupine.Ok {
			k := part[0].Input.(modelInput).Key
			v.FailingKeys = append(v.FailingKeys, k)
			v.failing = append(v.failing, part...)
		}
	}
	sort.Strings(v.FailingKeys)
	v.Diagnosis = diagnose(ops, v.FailingKeys)
	return v
}
