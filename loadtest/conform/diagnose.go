package conform

import (
	"fmt"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The reasons diagnose gives for a key whose history has no legal order.
// They name what the answers show, so a reader need not open history.html
// to learn what broke; history.html still shows where.
const (
	whyOtherSameAnswer = "another payload got the same 2xx answer"
	whyOtherAccepted   = "two payloads got different 2xx answers"
	whyReplayDiffers   = "one payload got different 2xx answers"
	whyMismatchAlone   = "422 with no other payload on the key"
	whyEffectsDiffer   = "the final read disagrees with the answers"
	whyUnknown         = "no legal order (see history.html)"
)

// diagnose returns, for the failing keys of ops, how many keys show each
// reason (a key can show several). It reads the answers directly; the
// verdict itself is porcupine's.
func diagnose(ops []porcupine.Operation, failing []string) map[string]int {
	if len(failing) == 0 {
		return nil
	}
	bad := make(map[string]bool, len(failing))
	for _, k := range failing {
		bad[k] = true
	}
	type keyOps struct {
		bodies   map[string]map[string]bool // payload -> 2xx body fingerprints
		payloads map[string]bool
		mismatch []string // payloads that got 422
		final    int      // -1: no final read
	}
	byKey := map[string]*keyOps{}
	for _, op := range ops {
		in, out := op.Input.(modelInput), op.Output.(modelOutput)
		if !bad[in.Key] {
			continue
		}
		k := byKey[in.Key]
		if k == nil {
			k = &keyOps{bodies: map[string]map[string]bool{}, payloads: map[string]bool{}, final: -1}
			byKey[in.Key] = k
		}
		switch {
		case in.Final:
			k.final = out.Effects
		case out.Class == ansOK:
			k.payloads[in.Payload] = true
			if k.bodies[in.Payload] == nil {
				k.bodies[in.Payload] = map[string]bool{}
			}
			k.bodies[in.Payload][out.Body] = true
		case out.Class == ansMismatch:
			k.payloads[in.Payload] = true
			k.mismatch = append(k.mismatch, in.Payload)
		default:
			k.payloads[in.Payload] = true
		}
	}
	why := map[string]int{}
	for _, k := range byKey {
		var reasons []string
		all := map[string]bool{}
		for _, bs := range k.bodies {
			for b := range bs {
				all[b] = true
			}
		}
		if len(k.bodies) > 1 {
			if shared := sharedBody(k.bodies); shared {
				reasons = append(reasons, whyOtherSameAnswer)
			} else {
				reasons = append(reasons, whyOtherAccepted)
			}
		}
		for _, bs := range k.bodies {
			if len(bs) > 1 {
				reasons = append(reasons, whyReplayDiffers)
				break
			}
		}
		if len(k.mismatch) > 0 && len(k.payloads) < 2 {
			reasons = append(reasons, whyMismatchAlone)
		}
		if k.final > 1 || (k.final == 0 && len(all) > 0) {
			reasons = append(reasons, whyEffectsDiffer)
		}
		if len(reasons) == 0 {
			reasons = append(reasons, whyUnknown)
		}
		for _, r := range reasons {
			why[r]++
		}
	}
	return why
}

// sharedBody reports whether two payloads got one same 2xx body.
func sharedBody(bodies map[string]map[string]bool) bool {
	seen := map[string]string{}
	for p, bs := range bodies {
		for b := range bs {
			if q, ok := seen[b]; ok && q != p {
				return true
			}
			seen[b] = p
		}
	}
	return false
}

// Reasons returns the diagnosis's reasons, sorted, without counts.
func (v Verdict) Reasons() []string {
	out := make([]string, 0, len(v.Diagnosis))
	for r := range v.Diagnosis {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// describeDiagnosis is the diagnosis in words: "reason (n keys); ...".
func describeDiagnosis(why map[string]int) string {
	var parts []string
	for _, r := range (Verdict{Diagnosis: why}).Reasons() {
		unit := "keys"
		if why[r] == 1 {
			unit = "key"
		}
		parts = append(parts, fmt.Sprintf("%s (%d %s)", r, why[r], unit))
	}
	return strings.Join(parts, "; ")
}
