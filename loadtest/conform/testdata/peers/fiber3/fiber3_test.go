package fiber3

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/idempotency"
	redisstore "github.com/gofiber/storage/redis/v3"
	"github.com/oncepay/oncepay/loadtest/conform"
	"github.com/oncepay/oncepay/loadtest/conform/internal/peerreport"
)

// The tests run conform against a tiny Fiber v3 app behind the
// idempotency middleware, configured for Idempotency-Key and keys up to
// 255 characters, on in-memory and on Redis storage. They report; they do
// not fail on the middleware's rows.
func TestFiberV3Memory(t *testing.T) {
	peerreport.Run(t, name(t, "memory"), serve(t, nil))
}

func TestFiberV3Redis(t *testing.T) {
	u := os.Getenv("REDIS_URL")
	if u == "" {
		t.Fatal("REDIS_URL is not set: run under scripts/harness (make conform-peers does)")
	}
	store := redisstore.New(redisstore.Config{URL: u})
	t.Cleanup(func() { store.Close() })
	peerreport.Run(t, name(t, "Redis storage (`gofiber/storage/redis/v3` "+peerreport.ModuleVersion(t, "github.com/gofiber/storage/redis/v3")+")"), serve(t, slowStorage{store, peerreport.RedisLatency}))
}

func name(t *testing.T, storage string) string {
	return "Fiber " + peerreport.ModuleVersion(t, "github.com/gofiber/fiber/v3") + " `middleware/idempotency`, " + storage
}

// serve starts the app on storage (nil: the middleware's memory) and
// returns its target.
func serve(t *testing.T, storage fiber.Storage) conform.Target {
	t.Helper()
	app := fiber.New()
	app.Use(idempotency.New(idempotency.Config{
		KeyHeader: "Idempotency-Key",
		KeyHeaderValidate: func(k string) error {
			if len(k) == 0 || len(k) > 255 {
				return fiber.NewError(fiber.StatusBadRequest, "invalid Idempotency-Key")
			}
			return nil
		},
		KeepResponseHeaders: []string{"Content-Type", "Location"},
		Lifetime:            time.Hour,
		Storage:             storage,
	}))
	var n atomic.Int64
	app.Post("/things", func(c fiber.Ctx) error {
		time.Sleep(20 * time.Millisecond)
		id := n.Add(1)
		c.Location(fmt.Sprintf("/things/%d", id))
		return c.Status(fiber.StatusCreated).JSON(fiber.Map{"id": id, "body": string(c.Body())})
	})
	app.Get("/things", func(c fiber.Ctx) error { return c.JSON([]int{}) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	t.Cleanup(func() { app.ShutdownWithTimeout(time.Second) }) // conform's idle keep-alive connections would hold Shutdown
	return conform.Target{
		URL:    "http://" + ln.Addr().String() + "/things",
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   `{"name":"{{vary}}"}`,
		Storm:  peerreport.Storm(),
	}
}

// slowStorage delays every read and write by d, as if Redis were across a
// network (peerreport.RedisLatency).
type slowStorage struct {
	fiber.Storage
	d time.Duration
}

func (s slowStorage) Get(key string) ([]byte, error) {
	time.Sleep(s.d)
	return s.Storage.Get(key)
}

func (s slowStorage) Set(key string, val []byte, exp time.Duration) error {
	time.Sleep(s.d)
	return s.Storage.Set(key, val, exp)
}

func (s slowStorage) Delete(key string) error {
	time.Sleep(s.d)
	return s.Storage.Delete(key)
}

func (s slowStorage) GetWithContext(ctx context.Context, key string) ([]byte, error) {
	time.Sleep(s.d)
	return s.Storage.GetWithContext(ctx, key)
}

func (s slowStorage) SetWithContext(ctx context.Context, key string, val []byte, exp time.Duration) error {
	time.Sleep(s.d)
	return s.Storage.SetWithContext(ctx, key, val, exp)
}

func (s slowStorage) DeleteWithContext(ctx context.Context, key string) error {
	time.Sleep(s.d)
	return s.Storage.DeleteWithContext(ctx, key)
}
