package idemhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// New returns the middleware with cfg (see the package doc and Config). It
// panics when cfg.Boundary is nil.
func New(cfg Config) func(http.Handler) http.Handler {
	if cfg.Boundary == nil {
		panic("idemhttp: Config.Boundary is required")
	}
	m := &middleware{cfg: cfg.withDefaults(), defaultFingerprint: cfg.Fingerprint == nil}
	if m.cfg.Retention > 0 {
		m.retention = strconv.FormatInt(int64(m.cfg.Retention/time.Second), 10)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
	}
}

type middleware struct {
	cfg                Config
	retention          string // Idempotency-Key-Retention, or ""
	defaultFingerprint bool   // cfg.Fingerprint is Fingerprint
}

// Request is what the middleware knows of a request under it, for its
// handler (FromContext).
type Request struct {
	// Key is the scoped key.
	Key idem.Key
	// Fingerprint is the request's fingerprint ("" inside Fingerprint).
	Fingerprint string
}

type requestKey struct{}

// FromContext returns the key and fingerprint of the request whose context
// ctx is, from Config.WithKey and Config.Fingerprint on; false outside the
// middleware or without a key.
func FromContext(ctx context.Context) (Request, bool) {
	req, ok := ctx.Value(requestKey{}).(*Request)
	if !ok {
		return Request{}, false
	}
	return *req, true
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if !slices.Contains(m.cfg.Methods, r.Method) {
		next.ServeHTTP(w, r)
		return
	}
	key, err := headerKey(r)
	if errors.Is(err, ErrNoKey) && m.cfg.Optional {
		next.ServeHTTP(w, r)
		return
	}
	if err != nil {
		m.cfg.Error(w, r, err)
		return
	}
	scope, err := m.cfg.Scope(r)
	if err != nil {
		m.cfg.Error(w, r, err)
		return
	}
	k, err := idem.NewKey(scope, key)
	if err != nil {
		m.cfg.Error(w, r, err)
		return
	}
	if m.cfg.WithKey != nil {
		r = m.cfg.WithKey(r, k)
	}
	x := &exchange{info: Request{Key: k}, from: r}
	x.ctx = context.WithValue(r.Context(), requestKey{}, &x.info)
	if x.info.Fingerprint, err = m.fingerprint(x); err != nil {
		m.cfg.Error(w, x.request(), err)
		return
	}
	if m.retention != "" {
		w.Header().Set(HeaderRetention, m.retention)
	}
	m.claim(w, x, next)
}

// exchange is one request under the middleware from the moment its key is
// known: what FromContext returns, the body read again, the recorder, in
// one allocation. The request the middleware's callbacks and the handler
// see is from with the context ctx (the key's Request) and, once the body
// was read, the body replayed; it is made when one of them needs it, so
// that a request that only meets the default Fingerprint and the handler
// is copied once (with the handler's context), not once per context.
type exchange struct {
	info Request
	from *http.Request   // the request as it came in (after Config.WithKey)
	ctx  context.Context // from's context with info
	body replayBody      // from's body, read again (read set when it is)
	rec  recorder
	req  *http.Request // from with ctx and body, once made
}

// request returns from with ctx and the body read again, made once.
func (x *exchange) request() *http.Request {
	if x.req == nil {
		x.req = x.with(x.ctx)
	}
	return x.req
}

// with returns a copy, with ctx, of the request that Config.Fingerprint
// got, or of from with the body read again when none was made.
func (x *exchange) with(ctx context.Context) *http.Request {
	if x.req != nil {
		return x.req.WithContext(ctx)
	}
	r := x.from.WithContext(ctx)
	if x.body.rest != nil {
		r.Body = &x.body
	}
	return r
}

// headerKey returns the request's Idempotency-Key, unquoted: ErrNoKey,
// ErrManyKeys or an idem.ErrInvalidKey error when there is not exactly one
// valid one.
func headerKey(r *http.Request) (string, error) {
	values := r.Header["Idempotency-Key"] // the canonical name: r.Header.Values without the canonicalization
	switch len(values) {
	case 0:
		return "", ErrNoKey
	case 1:
		return idem.ParseKey(values[0])
	}
	return "", ErrManyKeys
}

// fingerprint runs Config.Fingerprint and gives the handler the body
// again: what Fingerprint read, then the rest. With the default
// Fingerprint, the body is read once, here, and the handler reads it
// from memory.
func (m *middleware) fingerprint(x *exchange) (string, error) {
	body := x.from.Body
	noBody := body == nil || body == http.NoBody
	switch {
	case m.defaultFingerprint && noBody:
		return fingerprintOf(x.from, nil)
	case noBody:
		return m.cfg.Fingerprint(x.request())
	case m.defaultFingerprint:
		b, err := readBody(body, x.from.ContentLength)
		if err != nil {
			return "", err
		}
		x.body = replayBody{read: b, rest: body}
		return fingerprintOf(x.from, b) // reads only method, route and Content-Type
	}
	x.body = replayBody{rest: body, tee: true}
	if x.from.ContentLength > 0 {
		x.body.read = make([]byte, 0, presize(x.from.ContentLength))
	}
	r := x.request()
	fp, err := m.cfg.Fingerprint(r)
	x.body.tee = false
	r.Body = &x.body
	return fp, err
}

// replayBody is a request body read twice: while tee is set, reading it
// reads rest and keeps what it read in read; then it reads read again,
// then the rest of rest. Close closes rest.
type replayBody struct {
	read []byte
	off  int
	rest io.ReadCloser
	tee  bool
}

func (b *replayBody) Read(p []byte) (int, error) {
	if b.tee {
		n, err := b.rest.Read(p)
		b.read = append(b.read, p[:n]...)
		return n, err
	}
	if b.off < len(b.read) {
		n := copy(p, b.read[b.off:])
		b.off += n
		return n, nil
	}
	return b.rest.Read(p)
}

func (b *replayBody) Close() error { return b.rest.Close() }

// claim begins the stage on a context detached from the client (bounded by
// the store's own timeout) and answers what Begin found.
func (m *middleware) claim(w http.ResponseWriter, x *exchange, next http.Handler) {
	k, fp := x.info.Key, x.info.Fingerprint
	detached := context.WithoutCancel(x.ctx)
	claim, err := m.cfg.Boundary.Begin(detached, k, m.cfg.Stage, fp)
	if errors.Is(err, idem.ErrInProgress) {
		claim, err = m.wait(x, err)
	}
	switch {
	case errors.Is(err, idem.ErrMismatch):
		m.mismatch(w, x, err)
	case err != nil:
		m.cfg.Error(w, x.request(), err)
	case claim.Outcome == idem.Completed:
		var stored idem.Response
		if err := stored.UnmarshalBinary(claim.Result); err != nil {
			m.cfg.Error(w, x.request(), fmt.Errorf("replay %s: %w", k, err))
			return
		}
		w.Header().Set(HeaderReplayed, "true")
		send(w, stored)
	default:
		m.run(w, x, detached, next, claim.Lease)
	}
}

// mismatch answers a request whose key's stage holds another fingerprint:
// 422, unless the durable backstop says the key is this request's.
func (m *middleware) mismatch(w http.ResponseWriter, x *exchange, mismatch error) {
	r := x.request()
	if m.cfg.Backstop != nil {
		answer, ok, err := m.cfg.Backstop(x.ctx, r, x.info.Key, x.info.Fingerprint)
		if err != nil { // it could not decide: a 422 might be wrong
			m.cfg.Error(w, r, fmt.Errorf("idemhttp: ask the durable backstop about %s: %w", x.info.Key, err))
			return
		}
		if ok {
			w.Header().Set(HeaderReplayed, "true")
			send(w, answer)
			return
		}
	}
	m.cfg.Error(w, r, mismatch)
}
