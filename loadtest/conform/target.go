package conform

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrUsage marks a Target that cannot be checked (a missing URL, a body
// template without its placeholder...); the command exits 2 on it.
var ErrUsage = errors.New("usage")

// Vary is the placeholder of Target.Body that conform replaces to make
// distinct payloads: one value for "the payload", another for "another
// payload". It must appear in the body at least once.
const Vary = "{{vary}}"

// Target is the endpoint under test and what conform may use of it.
type Target struct {
	URL    string      // the endpoint, e.g. http://127.0.0.1:8080/v1/payments
	Method string      // default POST
	Header http.Header // sent on every request: the first credential, Content-Type...
	// OtherHeader is a second credential (another tenant): its fields replace
	// Header's. Nil: the key scope rule is n/a.
	OtherHeader http.Header
	Body        string // the request body; must contain Vary

	KeyHeader     string   // default Idempotency-Key
	MaxKeyLen     int      // the longest key the target documents; default 255
	ReplayMarker  string   // header present only on replays; default Idempotent-Replayed; "-": none
	ReplayHeaders []string // headers a replay must repeat; default Content-Type, Location

	// FailHeader, added to a request, makes the target answer 5xx for it
	// (a test knob of the target). Nil: the "5xx not cached" rule is n/a.
	FailHeader http.Header
	// Effects says how often the operation took effect for a key. Nil:
	// "executed once" is checked only through the answers.
	Effects EffectReader
	// ExpiryDoc is the URL of the target's published key expiry policy.
	// Empty: the expiry rule is n/a.
	ExpiryDoc string
	// GetURL is the URL the "key on GET" rule reads; default URL.
	GetURL string

	Timeout  time.Duration // one request's limit; default 10s
	Client   *http.Client  // default: a client with Timeout
	Storm    Storm
	Progress io.Writer // a progress line per step, nil: none
}

// Storm shapes the concurrent part of a check. Zero fields take defaults.
type Storm struct {
	Keys     int // keys stormed; default 20; negative: no storm
	Clients  int // clients per key, all at once; default 4
	Parallel int // keys in flight at once; default 32
	MaxTries int // attempts per client before it gives up; default 12
	// OtherEvery: client 0 of every OtherEvery-th key sends another payload
	// (default 4; negative: never), so the storm races 422s too.
	OtherEvery int
	// FaultCommand is run with sh -c at each of FaultAt (after the storm's
	// start); its output goes to the report. Empty: no faults.
	FaultCommand string
	FaultAt      []time.Duration
	Seed         int64 // jitter of the backoff; default 1
}

// withDefaults returns t with its defaults filled in, or an error wrapping
// ErrUsage that lists every problem.
func (t Target) withDefaults() (Target, error) {
	var errs []string
	if u, err := url.Parse(t.URL); t.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Sprintf("URL %q: want an absolute http(s) URL", t.URL))
	}
	if !strings.Contains(t.Body, Vary) {
		errs = append(errs, fmt.Sprintf("body must contain %s, the value conform varies for another payload", Vary))
	}
	if t.Method == "" {
		t.Method = http.MethodPost
	}
	if t.KeyHeader == "" {
		t.KeyHeader = "Idempotency-Key"
	}
	if t.MaxKeyLen == 0 {
		t.MaxKeyLen = 255
	}
	if t.MaxKeyLen < 40 {
		errs = append(errs, fmt.Sprintf("max key length %d: conform's keys need 40", t.MaxKeyLen))
	}
	if t.ReplayMarker == "" {
		t.ReplayMarker = "Idempotent-Replayed"
	}
	if t.ReplayMarker == "-" {
		t.ReplayMarker = ""
	}
	if t.ReplayHeaders == nil {
		t.ReplayHeaders = []string{"Content-Type", "Location"}
	}
	if t.GetURL == "" {
		t.GetURL = t.URL
	}
	if t.Timeout == 0 {
		t.Timeout = 10 * time.Second
	}
	if t.Client == nil {
		t.Client = &http.Client{Timeout: t.Timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	}
	if t.Header == nil {
		t.Header = http.Header{}
	}
	s := &t.Storm
	if s.Keys == 0 {
		s.Keys = 20
	}
	if s.Clients <= 0 {
		s.Clients = 4
	}
	if s.Parallel <= 0 {
		s.Parallel = 32
	}
	if s.MaxTries <= 0 {
		s.MaxTries = 12
	}
	if s.OtherEvery == 0 {
		s.OtherEvery = 4
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if len(s.FaultAt) > 0 && s.FaultCommand == "" {
		errs = append(errs, "fault times given without a fault command")
	}
	if len(errs) > 0 {
		return t, fmt.Errorf("%w: %s", ErrUsage, strings.Join(errs, "; "))
	}
	return t, nil
}

// body returns the body for payload variant v ("a" is the payload, any
// other value another one).
func (t Target) body(v string) string { return strings.ReplaceAll(t.Body, Vary, "conform-"+v) }
