package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	fiber2 "github.com/gofiber/fiber/v2"
	idem2 "github.com/gofiber/fiber/v2/middleware/idempotency"
	fiber3 "github.com/gofiber/fiber/v3"
	idem3 "github.com/gofiber/fiber/v3/middleware/idempotency"
	redisstore "github.com/gofiber/storage/redis/v3"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
)

// variant is one server under test: a trivial handler on POST /orders,
// with or without an idempotency middleware.
type variant struct {
	name  string
	idem  bool // it has an idempotency middleware
	redis bool // it keeps its keys in Redis (its own database, db)
	db    int
	// serve answers on ln until ctx ends.
	serve func(ctx context.Context, ln net.Listener, redisURL string) error
}

// variants are every server, in the order they run.
var variants = []variant{
	{name: "net/http, no middleware", serve: serveBare},
	{name: "oncepay idemhttp, Redis", idem: true, redis: true, db: 1, serve: serveOncepay},
	{name: "Fiber v2, no middleware", serve: serveFiber2(none)},
	{name: "Fiber v2 idempotency, memory", idem: true, serve: serveFiber2(inMemory)},
	{name: "Fiber v2 idempotency, Redis", idem: true, redis: true, db: 2, serve: serveFiber2(inRedis)},
	{name: "Fiber v3 idempotency, memory", idem: true, serve: serveFiber3(inMemory)},
	{name: "Fiber v3 idempotency, Redis", idem: true, redis: true, db: 3, serve: serveFiber3(inRedis)},
}

// answer is every handler's answer: what a create endpoint returns.
var answer = []byte(`{"id":"ord_1","status":"accepted"}`)

// runs counts the handler's runs; each answer carries its number in
// X-Run, so that a replay shows (the run checks every middleware replays).
var runs atomic.Int64

func serveBare(ctx context.Context, ln net.Listener, _ string) error {
	return serveHTTP(ctx, ln, http.HandlerFunc(handle))
}

func handle(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Run", strconv.FormatInt(runs.Add(1), 10))
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(answer)
}

func serveOncepay(ctx context.Context, ln net.Listener, redisURL string) error {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	opt.DB = 1
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	store := idem.New(rdb, idem.Config{Retention: 30 * time.Minute})
	mux := http.NewServeMux()
	mux.Handle("POST /orders", idemhttp.New(idemhttp.Config{Boundary: idemhttp.Store(store)})(http.HandlerFunc(handle)))
	return serveHTTP(ctx, ln, mux)
}

func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// fiberKey accepts every key the load sends; Fiber's default wants 36
// characters, which the load's keys have.
func fiberKey(k string) error {
	if len(k) != 36 {
		return fmt.Errorf("key of %d characters, want 36", len(k))
	}
	return nil
}

func storage(redisURL string, db int) *redisstore.Storage {
	opt, _ := redis.ParseURL(redisURL) // parsed by run already
	opt.DB = db
	return redisstore.NewFromConnection(redis.NewClient(opt))
}

// store is where a Fiber idempotency middleware keeps its keys.
type store int

const (
	none     store = iota // no middleware
	inMemory              // Fiber's in-memory storage (the default)
	inRedis               // github.com/gofiber/storage/redis/v3
)

func serveFiber2(st store) func(ctx context.Context, ln net.Listener, redisURL string) error {
	return func(ctx context.Context, ln net.Listener, redisURL string) error {
		app := fiber2.New(fiber2.Config{DisableStartupMessage: true})
		if st != none {
			cfg := idem2.Config{KeyHeader: "Idempotency-Key", Lifetime: 30 * time.Minute, KeyHeaderValidate: fiberKey}
			if st == inRedis {
				cfg.Storage = storage(redisURL, 2)
			}
			app.Use(idem2.New(cfg))
		}
		app.Post("/orders", func(c *fiber2.Ctx) error {
			c.Set("Content-Type", "application/json")
			c.Set("X-Run", strconv.FormatInt(runs.Add(1), 10))
			return c.Status(http.StatusCreated).Send(answer)
		})
		go func() {
			<-ctx.Done()
			_ = app.ShutdownWithTimeout(time.Second)
		}()
		return app.Listener(ln)
	}
}

func serveFiber3(st store) func(ctx context.Context, ln net.Listener, redisURL string) error {
	return func(ctx context.Context, ln net.Listener, redisURL string) error {
		app := fiber3.New()
		cfg := idem3.Config{KeyHeader: "Idempotency-Key", Lifetime: 30 * time.Minute, KeyHeaderValidate: fiberKey}
		if st == inRedis {
			cfg.Storage = storage(redisURL, 3)
		}
		app.Use(idem3.New(cfg))
		app.Post("/orders", func(c fiber3.Ctx) error {
			c.Set("Content-Type", "application/json")
			c.Set("X-Run", strconv.FormatInt(runs.Add(1), 10))
			return c.Status(http.StatusCreated).Send(answer)
		})
		go func() {
			<-ctx.Done()
			_ = app.ShutdownWithTimeout(time.Second)
		}()
		return app.Listener(ln, fiber3.ListenConfig{DisableStartupMessage: true})
	}
}

// opsHandler answers GET /heap with the live heap after a GC, in bytes: the
// memory the server holds for the keys it has seen; and GET
// /debug/pprof/profile, a CPU profile of the server under load.
func opsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /heap", func(w http.ResponseWriter, _ *http.Request) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		_, _ = w.Write([]byte(strconv.FormatUint(ms.HeapAlloc, 10)))
	})
	return mux
}
