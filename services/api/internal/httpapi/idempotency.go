package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/services/api/internal/metrics"
)

// stageAPI is the api's stage in the boundary hash.
const stageAPI = "api"

// headerReplayed marks an answer that was given before, from Redis or from
// the database backstop.
const headerReplayed = "Idempotent-Replayed"

// storedHeaders are the response headers that are part of an answer, stored
// and replayed with it. Per-request headers (X-Request-Id) are not.
// Retry-After comes only with a 503 (databaseUnavailable), which is sent
// but never stored.
var storedHeaders = []string{"Content-Type", "Location", "Retry-After"}

// work is the part of a request that must run at most once per key. It
// writes its answer to w or returns an error (written as a problem).
type work func(ctx context.Context, w http.ResponseWriter) error

// idempotent runs do under the boundary's api stage for key and the
// request's fingerprint, and answers the request. Every boundary call runs
// detached from the client's cancellation, bounded by the boundary's own
// timeout (idem.Config.Timeout): a client that hangs up while Begin waits
// for Redis must not abandon a claim that Redis still makes, which would
// answer the client's retry 409 for a whole lease.
//
//   - Acquired: do runs with a recorder, detached from client cancellation
//     and bounded by the lease; a 2xx/4xx answer is stored with
//     Lease.Complete, a 5xx answer releases the stage so the client may
//     retry. When do fails with a *heldByAnother (the database backstop
//     found the key held by another request), its 422 is sent but not
//     stored: the stage is completed with the holder's fingerprint and
//     first answer instead (see ending). The stage is ended BEFORE the
//     answer is sent: when Redis does not answer Complete or Release (a
//     restart), endLease retries it for up to the configured time while
//     the client waits, so that an answer the client has seen is recorded
//     in Redis (see endLease). The stage is ended while the outbox
//     message of a new payment is on its way to the broker: the wait for
//     its confirm (recorder.published) comes after endLease, so the two
//     overlap instead of adding up. The
//     recorded answer is then sent, even when ending the stage failed
//     (ErrLost: a newer owner took over; the database backstop made both
//     answers the same payment; or the retry time ran out).
//   - Completed: the stored answer is replayed byte for byte, plus
//     Idempotent-Replayed: true.
//   - Errors of Begin (in progress, mismatch, unavailable, out of memory)
//     are returned for problemFor to map (409, 422, 503, 503).
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, key idem.Key, fingerprint string, do work) error {
	detached := context.WithoutCancel(r.Context())
	claim, err := s.boundary.Begin(detached, key, stageAPI, fingerprint)
	if err != nil {
		return err
	}
	if claim.Outcome == idem.Completed {
		var stored idem.Response
		if err := stored.UnmarshalBinary(claim.Result); err != nil {
			return fmt.Errorf("replay %s: %w", key, err)
		}
		w.Header().Set(headerReplayed, "true")
		send(w, stored)
		return nil
	}

	lease := claim.Lease
	settled := false
	defer func() {
		if !settled { // do panicked: give the key back before the panic goes on
			if err := lease.Release(detached); err != nil {
				s.log.WarnContext(r.Context(), "release after panic", "key", key.String(), "err", err)
			}
		}
	}()

	ctx, cancel := context.WithTimeout(detached, s.workTimeout)
	defer cancel()
	rec := &recorder{header: http.Header{}}
	workErr := do(ctx, rec)
	if workErr != nil {
		s.writeError(rec, r, workErr)
	}
	answer := rec.response()
	op, end := ending(lease, answer, workErr)
	err = s.endLease(detached, key, answer.Status, op, end)
	settled = true
	rec.waitPublished()
	if err != nil {
		s.log.WarnContext(r.Context(), "boundary: answer not recorded in Redis; sending it anyway",
			"key", key.String(), "status", answer.Status, "op", op, "lost", errors.Is(err, idem.ErrLost), "err", err)
	}
	if v := rec.header.Get(headerReplayed); v != "" { // the database backstop answered
		w.Header().Set(headerReplayed, v)
	}
	send(w, answer)
	return nil
}

// endLease ends the api stage with end (op: Complete or Release) before
// the answer is sent, and returns end's error. When Redis does not answer
// (idem.ErrUnavailable: a restart, LOADING, a timeout), it retries end
// with idem.Retry for up to endRetry, on ctx (detached from the client),
// and counts how that ended in idem_lease_end_retries_total.
//
// Why the client waits: an answer that is sent while its stage is still
// PENDING lives only in this process. If the process dies before Redis is
// back (a SIGKILL a few seconds after a Redis restart), nothing ends the
// stage, and the client, which has its answer, never retries: the stage
// stays PENDING for the whole retention. Ending it first closes that
// window: either the answer is recorded before the client sees it, or the
// process dies while the client waits, the client is cut off, retries
// with the same key, takes the stage over after the lease and is answered
// by the database backstop, which completes the stage.
//
// What is left: when Redis is still not back after endRetry, the answer
// is sent anyway (gave_up) and the stage stays PENDING until a retry of
// the client takes it over after the lease.
func (s *Server) endLease(ctx context.Context, key idem.Key, status int, op idem.Op, end func(context.Context) error) error {
	err := end(ctx)
	if !errors.Is(err, idem.ErrUnavailable) {
		return err
	}
	log := s.log.With("key", key.String(), "status", status, "op", op)
	if s.endRetry <= 0 {
		s.metrics.IdemLeaseEndRetries.WithLabelValues(string(op), metrics.EndGaveUp).Inc()
		return err
	}
	log.WarnContext(ctx, "boundary: could not end the stage in Redis (unreachable or full); retrying before sending the answer",
		"retry_for", s.endRetry.String(), "err", err)
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, s.endRetry)
	defer cancel()
	err = idem.Retry(rctx, idem.Backoff{Limit: s.endRetry}, end)
	log = log.With("took", time.Since(start).Round(time.Millisecond).String())
	switch {
	case err == nil:
		s.metrics.IdemLeaseEndRetries.WithLabelValues(string(op), metrics.EndRecovered).Inc()
		log.InfoContext(ctx, "boundary: stage ended in Redis after a retry")
	case errors.Is(err, idem.ErrLost):
		s.metrics.IdemLeaseEndRetries.WithLabelValues(string(op), metrics.EndLost).Inc()
		log.InfoContext(ctx, "boundary: another request took the key over before the retry got through", "err", err)
	default:
		s.metrics.IdemLeaseEndRetries.WithLabelValues(string(op), metrics.EndGaveUp).Inc()
		log.WarnContext(ctx, "boundary: gave up ending the stage in Redis; it stays pending until its lease runs out and a retry takes it over", "err", err)
	}
	return err
}

// ending returns how to end lease after answer, the answer to work that
// returned workErr: Complete with it (2xx, 4xx: replayed from now on) or
// Release (5xx: the client may retry). When workErr is a *heldByAnother,
// the answer (a 422) belongs to a request that reused another request's
// key after Redis lost it: the stage is completed with the holder's
// fingerprint and first answer (CompleteAs), so that the holder's retries
// replay that answer and this request's retries get 422 from Begin. A
// Lease that cannot do that (the comparison strategies') is released
// instead (naive.Lease.CompleteAs): nothing is stored from this request.
func ending(lease Lease, answer idem.Response, workErr error) (idem.Op, func(context.Context) error) {
	var held *heldByAnother
	if errors.As(workErr, &held) {
		return idem.OpComplete, completeWith(held.answer, func(ctx context.Context, result []byte) error {
			return lease.CompleteAs(ctx, held.fingerprint, result)
		})
	}
	if answer.Status >= 500 {
		return idem.OpRelease, lease.Release
	}
	return idem.OpComplete, completeWith(answer, lease.Complete)
}

// completeWith returns an end that stores answer with complete.
func completeWith(answer idem.Response, complete func(context.Context, []byte) error) func(context.Context) error {
	result, err := answer.MarshalBinary()
	if err != nil {
		return func(context.Context) error { return fmt.Errorf("store the answer: %w", err) }
	}
	return func(ctx context.Context) error { return complete(ctx, result) }
}

// heldByAnother is the error of work whose database backstop found the key
// held by another request (payments.KeyReusedError): fingerprint and
// answer are that request's. The request itself is answered with err's
// problem (422); idempotent repairs the stage to the holder.
type heldByAnother struct {
	fingerprint string
	answer      idem.Response
	err         error
}

func (e *heldByAnother) Error() string { return e.err.Error() }
func (e *heldByAnother) Unwrap() error { return e.err }

// send writes a stored or recorded answer.
func send(w http.ResponseWriter, a idem.Response) {
	for name, values := range a.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body) // the client may be gone; nothing to answer
}

// recorder is the ResponseWriter of work under a lease: it keeps the
// answer so that it can be stored before it is sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	// published, if set, waits for the confirm of the outbox message the
	// work published (payments.Created.Published).
	published func()
}

// waitPublished waits for the work's outbox confirm, if any.
func (rec *recorder) waitPublished() {
	if rec.published != nil {
		rec.published()
	}
}

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

func (rec *recorder) Write(b []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return rec.body.Write(b)
}

// response returns the recorded answer with only the stored headers.
func (rec *recorder) response() idem.Response {
	a := idem.Response{Status: rec.status, Header: http.Header{}, Body: rec.body.Bytes()}
	if a.Status == 0 {
		a.Status = http.StatusOK
	}
	for _, name := range storedHeaders {
		if v := rec.header.Values(name); len(v) > 0 {
			a.Header[name] = v
		}
	}
	return a
}
