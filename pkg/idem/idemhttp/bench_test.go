package idemhttp_test

import (
	"context"
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
// Compare the middleware's ns/op and allocs/op with direct's of the same
// caller count.
func BenchmarkMiddleware(b *testing.B) {
	for _, callers := range []int{1, 64} {
		for _, mode := range []string{"direct", "middleware"} {
			b.Run(mode+"/callers="+strconv.Itoa(callers), func(b *testing.B) {
				opt := redistest.Options(b, redisDB)
				opt.ContextTimeoutEnabled = true
				opt.PoolSize = max(callers, 10)
				rdb := redis.NewClient(opt)
				b.Cleanup(func() { _ = rdb.Close() })
				store := idem.New(rdb, idem.Config{Retention: time.Minute})
				prefix := redistest.Name(b, "bench")
				var n atomic.Int64
				op := direct(b, store, prefix, &n)
				if mode == "middleware" {
					op = throughMiddleware(store, prefix, &n)
				}
				b.ReportAllocs()
				b.SetParallelism(max(callers/runtime.GOMAXPROCS(0), 1))
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

func throughMiddleware(store *idem.Store, prefix string, n *atomic.Int64) func() {
	h := idemhttp.New(idemhttp.Config{Boundary: idemhttp.Store(store)})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(benchAnswer)
	}))
	return func() {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(benchBody))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", prefix+strconv.FormatInt(n.Add(1), 10))
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}
