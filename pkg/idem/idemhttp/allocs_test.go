package idemhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
)

// memBoundary is a Boundary that acquires every key and ends every lease
// at once, without Redis: the middleware's own work, alone.
type memBoundary struct{}

func (memBoundary) Begin(context.Context, idem.Key, string, string) (idemhttp.Claim, error) {
	return idemhttp.Claim{Outcome: idem.Acquired, Lease: memLease{}}, nil
}

type memLease struct{}

func (memLease) Complete(context.Context, []byte) error           { return nil }
func (memLease) CompleteAs(context.Context, string, []byte) error { return nil }
func (memLease) Release(context.Context) error                    { return nil }
func (memLease) Deadline() time.Time                              { return time.Now().Add(time.Minute) }

// maxOwnAllocs bounds the allocations of the middleware itself for a new
// request with a JSON body under the default configuration: the request
// and the handler alone, and the store's calls, are not counted; encoding
// the answer (idem.Response.MarshalBinary, a dozen) and fingerprinting the
// body (idem.Fingerprint, about twenty) are.
const maxOwnAllocs = 50

func TestMiddlewareAllocations(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"ord_1"}`))
	})
	tmpl := httptest.NewRequest(http.MethodPost, "/orders", nil)
	serve := func(h http.Handler) func() {
		return func() {
			r := new(http.Request)
			*r = *tmpl
			r.Header = http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"k1"}}
			r.Body = io.NopCloser(strings.NewReader(`{"amount":1250,"currency":"EUR"}`))
			r.ContentLength = 32
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
	}
	alone := testing.AllocsPerRun(200, serve(handler))
	through := testing.AllocsPerRun(200, serve(idemhttp.New(idemhttp.Config{Boundary: memBoundary{}})(handler)))
	if own := through - alone; own > maxOwnAllocs {
		t.Errorf("the middleware allocates %.0f times per new request (%.0f with the handler, %.0f without), want at most %d",
			own, through, alone, maxOwnAllocs)
	}
	t.Logf("the middleware's own allocations per new request: %.0f", through-alone)
}

// BenchmarkMiddlewareAlone is the middleware's own work for a new request,
// the store's calls left out (an in-memory Boundary), beside the handler
// alone: mode=middleware minus mode=handler is what the middleware adds
// on the CPU besides its two round trips.
func BenchmarkMiddlewareAlone(b *testing.B) {
	for _, mode := range []string{"handler", "middleware"} {
		b.Run("mode="+mode, func(b *testing.B) {
			mw := func(h http.Handler) http.Handler { return h }
			if mode == "middleware" {
				mw = idemhttp.New(idemhttp.Config{Boundary: memBoundary{}})
			}
			var n atomic.Int64
			op := throughMiddleware(mw, "alone", &n)
			b.ReportAllocs()
			for b.Loop() {
				op()
			}
		})
	}
}
