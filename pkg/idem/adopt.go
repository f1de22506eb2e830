package idem

import "context"

// CompleteAs is Complete for a request whose durable backstop found the key
// already held by another request: it stores result (the holder's first
// answer) and replaces the stage's fingerprint with fingerprint (the
// holder's), so that from now on Begin replays result to the holder's
// retries and answers ErrMismatch to every other request, this caller's
// own included. It repairs the stage to the durable truth after Redis lost
// it, instead of recording the caller's answer under the caller's
// fingerprint, which would turn the holder's retries away for the whole
// retention.
//
// Like Complete it is owner-checked: ErrLost, writing nothing, when the
// caller no longer owns the stage; ErrUnavailable (or ErrFull) when Redis
// fails; nil when called again after success. One Redis round trip
// (complete.lua with its optional fingerprint argument).
func (l *Lease) CompleteAs(ctx context.Context, fingerprint string, result []byte) error {
	err := l.run(ctx, OpComplete, l.store.complete, result, l.store.retentionArg, fingerprint)
	if err == nil {
		l.ended.Store(true)
	}
	return err
}
