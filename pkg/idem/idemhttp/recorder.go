package idemhttp

import (
	"bytes"
	"net/http"

	"github.com/oncepay/oncepay/pkg/idem"
)

// recorder is the ResponseWriter of a handler under a lease: it keeps the
// answer so that it can be stored before it is sent.
type recorder struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	held     *heldBy
	afterEnd []func()
}

// heldBy is what CompleteAs recorded.
type heldBy struct {
	fingerprint string
	answer      idem.Response
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

// response returns the recorded answer with the stored headers: names, or
// every header but Set-Cookie and Idempotent-Replayed when names is nil.
func (rec *recorder) response(names []string) idem.Response {
	a := idem.Response{Status: rec.status, Body: rec.body.Bytes()}
	if a.Status == 0 {
		a.Status = http.StatusOK
	}
	if names == nil {
		_, cookie := rec.header["Set-Cookie"]
		_, replayed := rec.header[HeaderReplayed]
		if !cookie && !replayed { // nothing to leave out: the handler is done with its header
			a.Header = rec.header
			return a
		}
		a.Header = make(http.Header, len(rec.header))
		for name, v := range rec.header {
			if name != "Set-Cookie" && name != HeaderReplayed {
				a.Header[name] = v
			}
		}
		return a
	}
	a.Header = make(http.Header, len(names))
	for _, name := range names {
		if v := rec.header.Values(name); len(v) > 0 {
			a.Header[http.CanonicalHeaderKey(name)] = v
		}
	}
	return a
}

// CompleteAs tells the middleware, from the handler of w, that the
// request's key is durably held by another request (the handler's own
// backstop found it, e.g. a unique-constraint conflict on the key): the
// stage is then completed with that request's fingerprint and first
// answer (idem.Lease.CompleteAs), not with what the handler writes, so
// that the holder's retries replay the holder's answer and every other
// payload gets 422. The handler still writes this request's own answer (a
// 422). It reports whether w is the middleware's.
func CompleteAs(w http.ResponseWriter, fingerprint string, answer idem.Response) bool {
	rec, ok := w.(*recorder)
	if ok {
		rec.held = &heldBy{fingerprint: fingerprint, answer: answer}
	}
	return ok
}

// AfterEnd registers f, from the handler of w, to run after the stage is
// ended and before the answer is sent (to overlap a wait, such as a
// broker's confirm, with the store's round trip). It reports whether w is
// the middleware's; when it is not, the caller runs f itself.
func AfterEnd(w http.ResponseWriter, f func()) bool {
	rec, ok := w.(*recorder)
	if ok {
		rec.afterEnd = append(rec.afterEnd, f)
	}
	return ok
}
