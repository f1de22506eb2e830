package naive

import (
	"fmt"
	"strings"
)

// Strategy names one idempotency strategy of the comparison: the value of
// IDEM_STRATEGY in the api and the worker.
type Strategy string

// The strategies. StrategyOncepay is the real boundary and the default;
// every other one is for demonstration or measurement only. Two variables
// tell them apart: the boundary (which Redis pattern the api and the
// worker use, or none) and the psp key (whether the worker propagates the
// payment's key to the psp or sends a fresh one per attempt). A "+key"
// strategy is its pattern with the propagated key, so that comparing the
// two rows isolates the key.
const (
	// StrategyOncepay is oncepay's boundary (package idem) with every
	// durable backstop.
	StrategyOncepay Strategy = "oncepay"
	// StrategyGetThenSet: GetThenSet in the api and the worker; the worker
	// sends a fresh psp key per attempt.
	StrategyGetThenSet Strategy = "get-then-set"
	// StrategyGetThenSetKey: GetThenSet with the propagated psp key.
	StrategyGetThenSetKey Strategy = "get-then-set+key"
	// StrategySetNXMarker: SetNXMarker in the api and the worker; fresh psp
	// key per attempt.
	StrategySetNXMarker Strategy = "setnx-marker"
	// StrategySetNXMarkerKey: SetNXMarker with the propagated psp key.
	StrategySetNXMarkerKey Strategy = "setnx-marker+key"
	// StrategyLockThenCheck: LockThenCheck in the api and the worker; fresh
	// psp key per attempt.
	StrategyLockThenCheck Strategy = "lock-then-check"
	// StrategyLockThenCheckKey: LockThenCheck with the propagated psp key.
	StrategyLockThenCheckKey Strategy = "lock-then-check+key"
	// StrategyAPIOnly: the real boundary in the api; the worker trusts every
	// delivery (Trusting) and sends a fresh psp key per attempt.
	StrategyAPIOnly Strategy = "api-only"
	// StrategyNoBackstop: the real boundary in both services, but the api
	// writes payments as if payments had no UNIQUE (merchant_id,
	// idempotency_key) constraint: a key that already has a payment gets a
	// second one, stored under NoBackstopAlias (the shared schema keeps the
	// constraint). The worker claims and charges it under the client's key,
	// NoBackstopKey, as a system without the constraint would.
	StrategyNoBackstop Strategy = "no-backstop"
	// StrategyOff: no boundary at all (Trusting in both services); the psp
	// key is still propagated and Postgres keeps its backstops.
	StrategyOff Strategy = "off"
)

// keySuffix marks a strategy that propagates the psp key.
const keySuffix = "+key"

// Strategies returns every strategy, the real one first.
func Strategies() []Strategy {
	return []Strategy{StrategyOncepay,
		StrategyGetThenSet, StrategyGetThenSetKey, StrategySetNXMarker, StrategySetNXMarkerKey,
		StrategyLockThenCheck, StrategyLockThenCheckKey, StrategyAPIOnly, StrategyNoBackstop, StrategyOff}
}

// ParseStrategy returns the strategy named s; an empty s is StrategyOncepay.
// An unknown name is an error that lists the valid ones.
func ParseStrategy(s string) (Strategy, error) {
	if s == "" {
		return StrategyOncepay, nil
	}
	for _, st := range Strategies() {
		if string(st) == s {
			return st, nil
		}
	}
	names := make([]string, 0, len(Strategies()))
	for _, st := range Strategies() {
		names = append(names, string(st))
	}
	return "", fmt.Errorf("unknown idempotency strategy %q (want one of %s)", s, strings.Join(names, ", "))
}

// Pattern returns the boundary s uses, without its psp key: get-then-set
// for get-then-set+key, s itself otherwise.
func (s Strategy) Pattern() Strategy { return Strategy(strings.TrimSuffix(string(s), keySuffix)) }

// FreshPSPKey reports whether the worker of s sends the psp a fresh key per
// attempt instead of the payment's propagated key.
func (s Strategy) FreshPSPKey() bool {
	switch s {
	case StrategyGetThenSet, StrategySetNXMarker, StrategyLockThenCheck, StrategyAPIOnly:
		return true
	}
	return false
}

// Real reports whether s is oncepay's boundary, not a comparison strategy.
func (s Strategy) Real() bool { return s == StrategyOncepay }

// Warning returns the sentence a service logs, at WARN, when it runs with
// s; empty for the real boundary.
func (s Strategy) Warning() string {
	var why string
	switch s {
	case StrategyOncepay:
		return ""
	case StrategyGetThenSet, StrategyGetThenSetKey:
		why = "check-then-act: concurrent and retried requests all run"
	case StrategySetNXMarker, StrategySetNXMarkerKey:
		why = "SET NX marker without owner or lease: a crashed owner blocks its key"
	case StrategyLockThenCheck, StrategyLockThenCheckKey:
		why = "two-phase lock with unconditional completion: a stale owner overwrites"
	case StrategyAPIOnly:
		why = "the worker trusts every delivery and sends the psp a fresh key per attempt"
	case StrategyNoBackstop:
		why = "the api bypasses the UNIQUE (merchant_id, idempotency_key) backstop, so Redis data loss creates duplicate payments"
	case StrategyOff:
		why = "no idempotency boundary at all; this mode exists to measure what the boundary costs"
	default:
		why = "unknown strategy"
	}
	if s.FreshPSPKey() && s != StrategyAPIOnly {
		why += ", and the psp gets a fresh key per attempt"
	}
	return fmt.Sprintf("IDEM_STRATEGY=%s is a DEMONSTRATION strategy that can charge twice or lose payments (%s); never run it with real money", s, why)
}

// aliasSeparator separates the client's key from the alias suffix.
const aliasSeparator = "~dup-"

// NoBackstopAlias returns the idempotency key under which no-backstop's api
// stores a second payment for key: key~dup-<the payment id's last 8
// characters>.
func NoBackstopAlias(key, paymentID string) string {
	return key + aliasSeparator + paymentID[max(0, len(paymentID)-8):]
}

// NoBackstopKey returns the client's key of a key that NoBackstopAlias may
// have made: everything before the last "~dup-".
func NoBackstopKey(key string) string {
	if i := strings.LastIndex(key, aliasSeparator); i > 0 {
		return key[:i]
	}
	return key
}
