package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/oncepay/oncepay/pkg/idem"
)

// stageAPI is the api's stage in the boundary hash.
const stageAPI = "api"

// headerReplayed marks an answer that was given before, from Redis or from
// the database backstop.
const headerReplayed = "Idempotent-Replayed"

// storedHeaders are the response headers that are part of an answer, stored
// and replayed with it. Per-request headers (X-Request-Id) are not.
var storedHeaders = []string{"Content-Type", "Location"}

// work is the part of a request that must run at most once per key. It
// writes its answer to w or returns an error (written as a problem).
type work func(ctx context.Context, w http.ResponseWriter) error

// idempotent runs do under the boundary's api stage for key and the
// request's fingerprint, and answers the request:
//
//   - Acquired: do runs with a recorder, detached from client cancellation
//     and bounded by the lease; a 2xx/4xx answer is stored with
//     Lease.Complete, a 5xx answer releases the stage so the client may
//     retry. The recorded answer is then sent, even when Complete fails
//     (ErrLost: a newer owner took over; the database backstop made both
//     answers the same payment). When Redis did not answer Complete or
//     Release, LeaseRetries retries it in the background.
//   - Completed: the stored answer is replayed byte for byte, plus
//     Idempotent-Replayed: true.
//   - Errors of Begin (in progress, mismatch, unavailable) are returned
//     for problemFor to map (409, 422, 503).
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, key idem.Key, fingerprint string, do work) error {
	claim, err := s.boundary.Begin(r.Context(), key, stageAPI, fingerprint)
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
	detached := context.WithoutCancel(r.Context())
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
	if err := do(ctx, rec); err != nil {
		s.writeError(rec, r, err)
	}
	answer := rec.response()
	op, end := ending(lease, answer)
	err = end(detached)
	settled = true
	switch {
	case errors.Is(err, idem.ErrUnavailable):
		// Redis did not answer (restarting, a timeout). The answer goes out
		// now; the stage is ended in the background, so that it does not
		// stay PENDING.
		s.log.WarnContext(r.Context(), "boundary: Redis did not answer; sending the answer, retrying in the background",
			"key", key.String(), "status", answer.Status, "op", op, "err", err)
		s.leaseRetries.Go(key, op, end)
	case err != nil:
		s.log.WarnContext(r.Context(), "boundary: answer not recorded in Redis; sending it anyway",
			"key", key.String(), "status", answer.Status, "lost", errors.Is(err, idem.ErrLost), "err", err)
	}
	if v := rec.header.Get(headerReplayed); v != "" { // the database backstop answered
		w.Header().Set(headerReplayed, v)
	}
	send(w, answer)
	return nil
}

// ending returns how to end lease after answer: Complete with it (2xx,
// 4xx: replayed from now on) or Release (5xx: the client may retry).
func ending(lease Lease, answer idem.Response) (idem.Op, func(context.Context) error) {
	if answer.Status >= 500 {
		return idem.OpRelease, lease.Release
	}
	result, err := answer.MarshalBinary()
	if err != nil {
		return idem.OpComplete, func(context.Context) error { return fmt.Errorf("store the answer: %w", err) }
	}
	return idem.OpComplete, func(ctx context.Context) error { return lease.Complete(ctx, result) }
}

// send writes a stored or recorded answer.
func send(w http.ResponseWriter, a idem.Response) {
	for name, values := range a.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(a.Status)
	w.Write(a.Body)
}

// recorder is the ResponseWriter of work under a lease: it keeps the
// answer so that it can be stored before it is sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
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
