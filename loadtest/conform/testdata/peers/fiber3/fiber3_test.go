package fiber3

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/idempotency"
	"github.com/oncepay/oncepay/loadtest/conform"
)

// TestFiberV3 runs conform against a tiny Fiber v3 app behind the
// idempotency middleware (in-memory storage), configured for
// Idempotency-Key and keys up to 255 characters. It reports; it does not
// fail on the middleware's rows.
func TestFiberV3Memory(t *testing.T) {
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
	report(t, "Fiber v3 idempotency, memory", conform.Target{
		URL:    "http://" + ln.Addr().String() + "/things",
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   `{"name":"{{vary}}"}`,
	})
}

// report checks tgt, logs the table and, with CONFORM_PEERS_OUT set,
// writes the peer's line of the docs table there.
func report(t *testing.T, name string, tgt conform.Target) {
	t.Helper()
	rep, err := conform.Check(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	t.Log("\n" + b.String())
	var pass, fail, na []string
	for _, row := range rep.Rows {
		switch row.Result {
		case conform.Pass:
			pass = append(pass, row.ID)
		case conform.Fail:
			fail = append(fail, fmt.Sprintf("`%s` (%s): %s", row.ID, row.Level, row.Detail))
		default:
			na = append(na, row.ID)
		}
	}
	dir := os.Getenv("CONFORM_PEERS_OUT")
	if dir == "" {
		return
	}
	line := fmt.Sprintf("| %s | %d | %d | %s |\n", name, len(pass), len(fail), strings.Join(fail, "<br>"))
	if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".md"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}
