package naive

import (
	"fmt"
	"strings"
)

// Strategy names one idempotency strategy of the comparison: the value of
// IDEM_STRATEGY in the api and the worker.
type Strategy string

// The strategies. StrategyOncepay is the real boundary and the default;
// every other one is for demonstration or measurement only.
const (
	// StrategyOncepay is oncepay's boundary (package idem) with every
	// durable backstop.
	StrategyOncepay Strategy = "oncepay"
	// StrategyGetThenSet: GetThenSet in the api and the worker; the worker
	// sends a fresh psp key per attempt.
	StrategyGetThenSet Strategy = "get-then-set"
	// StrategySetNXMarker: SetNXMarker in the api and the worker; fresh psp
	// key per attempt.
	StrategySetNXMarker Strategy = "setnx-marker"
	// StrategyLockThenCheck: LockThenCheck in the api and the worker; fresh
	// psp key per attempt.
	StrategyLockThenCheck Strategy = "lock-then-check"
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
	// key is still propagated and Postgres keeps its backstops. For
	// measuring what the boundary costs, not for running payments.
	StrategyOff Strategy = "off"
)

// Strategies returns every strategy, the real one first.
func Strategies() []Strategy {
	return []Strategy{StrategyOncepay, StrategyGetThenSet, StrategySetNXMarker, StrategyLockThenCheck,
		StrategyAPIOnly, StrategyNoBackstop, StrategyOff}
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

// Real reports whether s is oncepay's boundary, not a comparison strategy.
func (s Strategy) Real() bool { return s == StrategyOncepay }

// Warning returns the sentence a service logs, at WARN, when it runs with
// s; empty for the real boundary.
func (s Strategy) Warning() string {
	var why string
	switch s {
	case StrategyOncepay:
		return ""
	case StrategyGetThenSet:
		why = "check-then-act: concurrent and retried requests all run, and the psp gets a fresh key per attempt"
	case StrategySetNXMarker:
		why = "SET NX marker without owner or lease: a crashed owner blocks its key, and the psp gets a fresh key per attempt"
	case StrategyLockThenCheck:
		why = "two-phase lock with unconditional completion: a stale owner overwrites, and the psp gets a fresh key per attempt"
	case StrategyAPIOnly:
		why = "the worker trusts every delivery and sends the psp a fresh key per attempt"
	case StrategyNoBackstop:
		why = "the api bypasses the UNIQUE (merchant_id, idempotency_key) backstop, so Redis data loss creates duplicate payments"
	case StrategyOff:
		why = "no idempotency boundary at all; this mode exists to measure what the boundary costs"
	default:
		why = "unknown strategy"
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
