package idemhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
	"github.com/redis/go-redis/v9"
)

// BenchmarkMiddleware measures one new request through the middleware
// (key, fingerprint, Begin, the handler, Complete, the answer) beside the
// same two script round trips made directly with pkg/idem (Begin, encode
// the answer, Complete), on the harness Redis, with 1 and 64 callers.
// Compare the middleware's ns/op, cpu-ns/op and allocs/op with direct's of
// the same caller count. cpu-ns/op is this process's CPU time (user +
// system, every goroutine: the callers, go-redis, the GC) per operation:
// on a shared machine it moves less than ns/op, which counts waiting for
// the CPU too. Mode handler is the request and the handler without the
// middleware: what the middleware's numbers hold that is not its own (a
// request is built as a server hands it over, headers parsed, and answered
// into a minimal ResponseWriter).
func BenchmarkMiddleware(b *testing.B) {
	for _, callers := range []int{1, 64} {
		for _, mode := range []string{"direct", "middleware", "handler"} {
			b.Run("mode="+mode+"/callers="+strconv.Itoa(callers), func(b *testing.B) {
				opt := redistest.Options(b, redisDB)
				opt.ContextTimeoutEnabled = true
				opt.PoolSize = max(callers, 10)
				rdb := redis.NewClient(opt)
				b.Cleanup(func() { _ = rdb.Close() })
				store := idem.New(rdb, idem.Config{Retention: time.Minute})
				prefix := redistest.Name(b, "bench")
				var n atomic.Int64
				var op func()
				switch mode {
				case "direct":
					op = direct(b, store, prefix, &n)
				case "middleware":
					op = throughMiddleware(idemhttp.New(idemhttp.Config{Boundary: idemhttp.Store(store)}), prefix, &n)
				default:
					op = throughMiddleware(func(h http.Handler) http.Handler { return h }, prefix, &n)
				}
				b.ReportAllocs()
				b.SetParallelism(max(callers/runtime.GOMAXPROCS(0), 1))
				cpu := processCPU(b)
				defer func() { b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op") }()
				if callers == 1 {
					for b.Loop() {
						op()
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						op()
					}
				})
			})
		}
	}
}

const benchBody = `{"amount":1250,"currency":"EUR","customer_id":"cus_42"}`

var benchAnswer = []byte(`{"id":"ord_1","status":"accepted"}`)

func direct(b *testing.B, store *idem.Store, prefix string, n *atomic.Int64) func() {
	ctx := context.Background()
	return func() {
		k, _ := idem.NewKey("default", prefix+strconv.FormatInt(n.Add(1), 10))
		fp, _ := idem.Fingerprint(http.MethodPost, "/orders", []byte(benchBody))
		c, err := store.Begin(ctx, k, "http", fp)
		if err != nil {
			b.Error(err)
			return
		}
		result, _ := idem.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: benchAnswer}.MarshalBinary()
		if err := c.Lease.Complete(ctx, result); err != nil {
			b.Error(err)
		}
	}
}

// throughMiddleware returns one request with a new key through mw and a
// handler that answers benchAnswer.
func throughMiddleware(mw func(http.Handler) http.Handler, prefix string, n *atomic.Int64) func() {
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(benchAnswer)
	}))
	// httptest.NewRequest parses a request line and headers from text
	// each time, more work than the middleware's own: copy a built one.
	tmpl := httptest.NewRequest(http.MethodPost, "/orders", nil)
	return func() {
		r := new(http.Request)
		*r = *tmpl
		r.Header = http.Header{
			"Content-Type":    {"application/json"},
			"Idempotency-Key": {prefix + strconv.FormatInt(n.Add(1), 10)},
		}
		r.Body = io.NopCloser(strings.NewReader(benchBody))
		r.ContentLength = int64(len(benchBody))
		h.ServeHTTP(&answer{header: http.Header{}}, r)
	}
}

// answer is a ResponseWriter that keeps nothing but the header map.
type answer struct {
	header http.Header
	status int
}

func (a *answer) Header() http.Header         { return a.header }
func (a *answer) WriteHeader(status int)      { a.status = status }
func (a *answer) Write(b []byte) (int, error) { return len(b), nil }
