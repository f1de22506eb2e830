package idemhttp

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// Config configures the middleware. Only Boundary is required.
type Config struct {
	// Boundary claims the stages: Store(s) for an *idem.Store. The
	// store's idem.Config sets the lease, margin, timeout and retention.
	Boundary Boundary
	// Stage names the stage in the key's record. Default "http".
	Stage string
	// Scope returns the key's scope for r: keys of two scopes never meet
	// (the authenticated tenant; add the route to scope keys per route).
	// It must be 1-64 characters of [A-Za-z0-9_-]. An error is answered
	// through Error. Default: one scope, "default".
	Scope func(r *http.Request) (string, error)
	// WithKey, if set, is called once the key is parsed and scoped, before
	// the fingerprint, and may return r with a derived context (to log or
	// trace the key). Everything after it, the store calls included, uses
	// the returned request.
	WithKey func(r *http.Request, k idem.Key) *http.Request
	// Fingerprint returns what identifies the request's payload: a retry
	// with the same key must have the same fingerprint, or it is answered
	// 422. It may read r.Body; the handler reads the same bytes again. An
	// error is answered through Error, before the store is touched (an
	// invalid request consumes no key). Default: Fingerprint.
	Fingerprint func(r *http.Request) (string, error)
	// Methods are the methods covered; a key on any other method is
	// ignored (the request goes straight to the handler). Default POST,
	// PUT, PATCH and DELETE: a safe method needs no key.
	Methods []string
	// Optional lets a covered request without a key through to the
	// handler, unprotected. Default: such a request is answered 400.
	Optional bool
	// StoredHeaders are the response headers stored and replayed with an
	// answer. Default: every header the handler set but Set-Cookie.
	StoredHeaders []string
	// Retention, if positive, is advertised on every answer of a covered
	// request with a key, in the Idempotency-Key-Retention header (whole
	// seconds): how long a key is honoured at least. Set it to the store's
	// idem.Config.Retention, or longer when a durable backstop answers
	// replays for longer.
	Retention time.Duration
	// Backstop, if set, is asked when Begin answers idem.ErrMismatch (the
	// key's stage holds another fingerprint): if the key's durable record
	// was made by a request with this fingerprint, it returns that
	// request's first answer and true, and the answer is replayed instead
	// of 422. After Redis lost a key, the durable record is the truth.
	// An error means it could not decide: the answer is that error,
	// through Error (wrap idem.ErrUnavailable for the default's 503 +
	// Retry-After), never a 422 that may be wrong; return false and no
	// error to keep the 422. See also CompleteAs.
	Backstop func(ctx context.Context, r *http.Request, k idem.Key, fingerprint string) (idem.Response, bool, error)
	// EndRetry is how long, before it answers, a request retries the
	// Complete or Release that Redis did not answer. Zero: no retry; the
	// answer is sent and the stage stays pending until its lease ends.
	EndRetry time.Duration
	// OnEndRetry, if set, is called once per request whose end needed
	// EndRetry, with the operation and EndRecovered, EndLost or EndGaveUp.
	OnEndRetry func(op idem.Op, outcome string)
	// MaxWait bounds the wait a client may ask for with Prefer: wait=N
	// (RFC 7240) when its key is in progress. Default 10s; negative: the
	// preference is ignored and the answer is 409 at once.
	MaxWait time.Duration
	// Error writes every answer the middleware makes itself (a problem).
	// Default: WriteProblem.
	Error func(w http.ResponseWriter, r *http.Request, err error)
	// Logger logs what the client does not see (an end that failed). Default:
	// no logging.
	Logger *slog.Logger
}

// How a retried end of a stage ended (Config.OnEndRetry).
const (
	EndRecovered = "recovered" // a retry got through
	EndLost      = "lost"      // another request had taken the key over (nothing written)
	EndGaveUp    = "gave_up"   // still unavailable when EndRetry ran out
)

// Response headers the middleware sets.
const (
	// HeaderReplayed marks an answer given before: "true".
	HeaderReplayed = "Idempotent-Replayed"
	// HeaderRetention advertises Config.Retention in seconds.
	HeaderRetention = "Idempotency-Key-Retention"
)

func (c Config) withDefaults() Config {
	if c.Stage == "" {
		c.Stage = "http"
	}
	if c.Scope == nil {
		c.Scope = func(*http.Request) (string, error) { return "default", nil }
	}
	if c.Fingerprint == nil {
		c.Fingerprint = Fingerprint
	}
	if c.Methods == nil {
		c.Methods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	}
	if c.MaxWait == 0 {
		c.MaxWait = 10 * time.Second
	}
	if c.Error == nil {
		c.Error = WriteProblem
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
