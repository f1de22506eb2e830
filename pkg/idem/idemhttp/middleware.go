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
	info := &Request{Key: k}
	r = r.WithContext(context.WithValue(r.Context(), requestKey{}, info))
	if info.Fingerprint, err = m.fingerprint(r); err != nil {
		m.cfg.Error(w, r, err)
		return
	}
	if m.retention != "" {
		w.Header().Set(HeaderRetention, m.retention)
	}
	m.claim(w, r, next, k, info.Fingerprint)
}

// headerKey returns the request's Idempotency-Key, unquoted: ErrNoKey,
// ErrManyKeys or an idem.ErrInvalidKey error when there is not exactly one
// valid one.
func headerKey(r *http.Request) (string, error) {
	values := r.Header.Values("Idempotency-Key")
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
func (m *middleware) fingerprint(r *http.Request) (string, error) {
	body := r.Body
	if body == nil || body == http.NoBody {
		return m.cfg.Fingerprint(r)
	}
	if m.defaultFingerprint {
		b, err := readBody(body, r.ContentLength)
		if err != nil {
			return "", err
		}
		r.Body = &replayBody{read: b, rest: body}
		return fingerprintOf(r, b)
	}
	rb := &replayBody{rest: body, tee: true}
	if r.ContentLength > 0 {
		rb.read = make([]byte, 0, presize(r.ContentLength))
	}
	r.Body = rb
	fp, err := m.cfg.Fingerprint(r)
	rb.tee = false
	r.Body = rb
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
func (m *middleware) claim(w http.ResponseWriter, r *http.Request, next http.Handler, k idem.Key, fp string) {
	detached := context.WithoutCancel(r.Context())
	claim, err := m.cfg.Boundary.Begin(detached, k, m.cfg.Stage, fp)
	if errors.Is(err, idem.ErrInProgress) {
		claim, err = m.wait(r, k, fp, err)
	}
	switch {
	case errors.Is(err, idem.ErrMismatch):
		m.mismatch(w, r, k, fp, err)
	case err != nil:
		m.cfg.Error(w, r, err)
	case claim.Outcome == idem.Completed:
		var stored idem.Response
		if err := stored.UnmarshalBinary(claim.Result); err != nil {
			m.cfg.Error(w, r, fmt.Errorf("replay %s: %w", k, err))
			return
		}
		w.Header().Set(HeaderReplayed, "true")
		send(w, stored)
	default:
		m.run(w, r, detached, next, k, claim.Lease)
	}
}

// mismatch answers a request whose key's stage holds another fingerprint:
// 422, unless the durable backstop says the key is this request's.
func (m *middleware) mismatch(w http.ResponseWriter, r *http.Request, k idem.Key, fp string, mismatch error) {
	if m.cfg.Backstop != nil {
		answer, ok, err := m.cfg.Backstop(r.Context(), r, k, fp)
		if err != nil { // it could not decide: a 422 might be wrong
			m.cfg.Error(w, r, fmt.Errorf("idemhttp: ask the durable backstop about %s: %w", k, err))
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
