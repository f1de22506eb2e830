package idemhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// run runs next under lease into a recorder, ends the stage and answers.
//
// The work runs on a context detached from the client and bounded by the
// lease's Deadline: Begin's send time plus the lease minus the store's
// margin, not the lease counted from when Begin returned, so the work
// stops before another request may take the key over even when Begin's
// answer was slow. The stage is ended BEFORE the answer is sent (see
// end); the functions of AfterEnd run between the two. The recorded answer
// is then sent even when ending failed (ErrLost: a newer owner took over;
// or the retry time ran out): the client has no better one.
func (m *middleware) run(w http.ResponseWriter, r *http.Request, detached context.Context, next http.Handler, k idem.Key, lease Lease) {
	settled := false
	defer func() {
		if !settled { // next panicked: give the key back before the panic goes on
			if err := lease.Release(detached); err != nil {
				m.cfg.Logger.WarnContext(r.Context(), "release after panic", "key", k.String(), "err", err)
			}
		}
	}()
	ctx, cancel := context.WithDeadline(detached, lease.Deadline())
	defer cancel()
	rec := &recorder{header: http.Header{}}
	next.ServeHTTP(rec, r.WithContext(ctx))
	answer := rec.response(m.cfg.StoredHeaders)
	e := ending(lease, answer, rec.held)
	err := m.end(detached, k, answer.Status, &e)
	settled = true
	for _, f := range rec.afterEnd {
		f()
	}
	if err != nil {
		m.cfg.Logger.WarnContext(r.Context(), "boundary: answer not recorded in Redis; sending it anyway",
			"key", k.String(), "status", answer.Status, "op", e.op, "lost", errors.Is(err, idem.ErrLost), "err", err)
	}
	if v := rec.header.Get(HeaderReplayed); v != "" { // the handler's backstop answered
		w.Header().Set(HeaderReplayed, v)
	}
	if e.op == idem.OpRelease {
		// Not stored, never replayed: the client gets every header the
		// handler set (a 503's Retry-After), not only the stored ones.
		answer = rec.response(nil)
	}
	send(w, answer)
}

// ender is how to end a lease: Complete with result (CompleteAs with
// fingerprint when as is set) or Release.
type ender struct {
	lease       Lease
	op          idem.Op
	as          bool
	fingerprint string
	result      []byte
	err         error // the answer could not be encoded: end fails with it
}

// ending returns how to end lease after answer: Complete with it (2xx,
// 4xx: replayed from now on) or Release (5xx: the client may retry). When
// the handler called CompleteAs, the stage is completed with the holder's
// fingerprint and answer instead.
func ending(lease Lease, answer idem.Response, held *heldBy) ender {
	e := ender{lease: lease, op: idem.OpComplete}
	switch {
	case held != nil:
		e.as, e.fingerprint = true, held.fingerprint
		answer = held.answer
	case answer.Status >= 500:
		e.op = idem.OpRelease
		return e
	}
	if e.result, e.err = answer.MarshalBinary(); e.err != nil {
		e.err = fmt.Errorf("store the answer: %w", e.err)
	}
	return e
}

// end ends the lease once.
func (e *ender) end(ctx context.Context) error {
	switch {
	case e.err != nil:
		return e.err
	case e.op == idem.OpRelease:
		return e.lease.Release(ctx)
	case e.as:
		return e.lease.CompleteAs(ctx, e.fingerprint, e.result)
	}
	return e.lease.Complete(ctx, e.result)
}

// end ends the stage as e says (Complete or Release) before the answer
// is sent, and returns the error of that end. When Redis does not answer
// (idem.ErrUnavailable: a restart, LOADING, a timeout), it retries end
// with idem.Retry for up to Config.EndRetry, on ctx (detached from the
// client).
//
// Why the client waits: an answer sent while its stage is still pending
// lives only in this process. If the process dies before Redis is back,
// nothing ends the stage, and the client, which has its answer, never
// retries: the stage stays pending until its lease ends, and only a
// retry takes it over. Ending it first closes that window: either the
// answer is recorded before the client sees it, or the process dies while
// the client waits, the client is cut off and retries with the same key.
func (m *middleware) end(ctx context.Context, k idem.Key, status int, e *ender) error {
	err := e.end(ctx)
	if !errors.Is(err, idem.ErrUnavailable) {
		return err
	}
	op, again := e.op, *e // a copy for the retries: only this path allocates it
	log := m.cfg.Logger.With("key", k.String(), "status", status, "op", op)
	if m.cfg.EndRetry <= 0 {
		m.observeEnd(op, EndGaveUp)
		return err
	}
	log.WarnContext(ctx, "boundary: could not end the stage in Redis (unreachable or full); retrying before sending the answer",
		"retry_for", m.cfg.EndRetry.String(), "err", err)
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, m.cfg.EndRetry)
	defer cancel()
	err = idem.Retry(rctx, idem.Backoff{Limit: m.cfg.EndRetry}, again.end)
	log = log.With("took", time.Since(start).Round(time.Millisecond).String())
	switch {
	case err == nil:
		m.observeEnd(op, EndRecovered)
		log.InfoContext(ctx, "boundary: stage ended in Redis after a retry")
	case errors.Is(err, idem.ErrLost):
		m.observeEnd(op, EndLost)
		log.InfoContext(ctx, "boundary: another request took the key over before the retry got through", "err", err)
	default:
		m.observeEnd(op, EndGaveUp)
		log.WarnContext(ctx, "boundary: gave up ending the stage in Redis; it stays pending until its lease runs out and a retry takes it over", "err", err)
	}
	return err
}

func (m *middleware) observeEnd(op idem.Op, outcome string) {
	if m.cfg.OnEndRetry != nil {
		m.cfg.OnEndRetry(op, outcome)
	}
}

// send writes a stored or recorded answer.
func send(w http.ResponseWriter, a idem.Response) {
	for name, values := range a.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body) // the client may be gone; nothing to answer
}
