package orders_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/orders/orders"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

const hint = "start Redis and Postgres (in this repository: scripts/harness up && eval \"$(scripts/harness env)\") and set REDIS_URL and DATABASE_URL"

// service returns the orders handler on the REDIS_URL Redis (database 14,
// flushed first) and the DATABASE_URL Postgres, and its Redis client.
func service(t *testing.T) (http.Handler, *redis.Client) {
	t.Helper()
	redisURL, dbURL := os.Getenv("REDIS_URL"), os.Getenv("DATABASE_URL")
	if redisURL == "" || dbURL == "" {
		t.Fatal(hint)
	}
	ctx := context.Background()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	opt.DB = 14
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("redis: %v\n%s", err, hint)
	}
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Exec(ctx, orders.Schema); err != nil {
		t.Fatalf("postgres: %v\n%s", err, hint)
	}
	store := idem.New(rdb, idem.Config{Lease: 5 * time.Second, Retention: orders.Retention})
	return orders.NewHandler(db, store), rdb
}

func post(h http.Handler, key, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestOrders: concurrent requests with one key create one order; a retry
// is replayed; after Redis lost every key, the unique constraint answers
// the retry with the first answer and another payload with 422.
func TestOrders(t *testing.T) {
	h, rdb := service(t)
	key := "order-" + time.Now().Format("150405.000000000")
	var wg sync.WaitGroup
	codes := make([]int, 16)
	for i := range codes {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i] = post(h, key, `{"item":"tea","qty":2}`).Code }()
	}
	wg.Wait()
	created := 0
	for _, c := range codes {
		if c == http.StatusCreated {
			created++
		} else if c != http.StatusConflict {
			t.Errorf("concurrent answer %d, want 201 or 409", c)
		}
	}
	if created == 0 {
		t.Fatal("no request created the order")
	}
	first := post(h, key, `{"qty":2,"item":"tea"}`)
	if first.Code != http.StatusCreated || first.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %s; want the replay", first.Code, first.Header())
	}
	if err := rdb.FlushDB(context.Background()).Err(); err != nil { // Redis loses every key
		t.Fatal(err)
	}
	again := post(h, key, `{"item":"tea","qty":2}`)
	if again.Code != http.StatusCreated || again.Body.String() != first.Body.String() {
		t.Errorf("retry after Redis lost the key: %d %q; want the first answer %q", again.Code, again.Body, first.Body)
	}
	if got := post(h, key, `{"item":"coffee","qty":1}`).Code; got != http.StatusUnprocessableEntity {
		t.Errorf("the key with another payload: %d, want 422", got)
	}
}
