package fiber2

import (
	"net"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/idempotency"
	redisstore "github.com/gofiber/storage/redis/v3"
	"github.com/oncepay/oncepay/loadtest/conform"
	"github.com/oncepay/oncepay/loadtest/conform/internal/peerreport"
)

// The tests run conform against a tiny Fiber v2 app behind the
// idempotency middleware, configured for Idempotency-Key and keys up to
// 255 characters, on in-memory and on Redis storage. They report; they do
// not fail on the middleware's rows.
func TestFiberV2Memory(t *testing.T) {
	peerreport.Run(t, name(t, "memory"), serve(t, nil))
}

func TestFiberV2Redis(t *testing.T) {
	store := redisstore.New(redisstore.Config{URL: peerreport.RedisURL(t)})
	t.Cleanup(func() { store.Close() })
	peerreport.Run(t, name(t, "Redis storage (`gofiber/storage/redis/v3` "+peerreport.ModuleVersion(t, "github.com/gofiber/storage/redis/v3")+")"), serve(t, slowStorage{store, peerreport.RedisLatency}))
}

func name(t *testing.T, storage string) string {
	return "Fiber " + peerreport.ModuleVersion(t, "github.com/gofiber/fiber/v2") + " `middleware/idempotency`, " + storage
}

// serve starts the app on storage (nil: the middleware's memory) and
// returns its target.
func serve(t *testing.T, storage fiber.Storage) conform.Target {
	t.Helper()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(idempotency.New(idempotency.Config{
		KeyHeader: peerreport.KeyHeader,
		KeyHeaderValidate: func(k string) error {
			if !peerreport.ValidKey(k) {
				return fiber.NewError(fiber.StatusBadRequest, "invalid "+peerreport.KeyHeader)
			}
			return nil
		},
		KeepResponseHeaders: peerreport.KeepHeaders(), Lifetime: peerreport.Lifetime, Storage: storage,
	}))
	var things peerreport.Things
	app.Post("/things", func(c *fiber.Ctx) error {
		loc, answer := things.Create(c.Body())
		c.Location(loc)
		return c.Status(fiber.StatusCreated).JSON(answer)
	})
	app.Get("/things", func(c *fiber.Ctx) error { return c.JSON([]int{}) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln)
	t.Cleanup(func() { app.ShutdownWithTimeout(time.Second) }) // conform's idle keep-alive connections would hold Shutdown
	return peerreport.Target(ln.Addr().String())
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
