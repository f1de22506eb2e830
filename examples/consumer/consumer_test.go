package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"example.com/orders/consumer"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// provider ships once per idempotency key (as a real provider does), and
// counts the shipments it made; down makes its next call fail.
type provider struct {
	mu      sync.Mutex
	shipped map[string]string
	calls   int
	down    bool
}

func (p *provider) Ship(_ context.Context, key, item string, qty int) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.down {
		p.down = false
		return "", errors.New("provider unavailable")
	}
	if id, ok := p.shipped[key]; ok {
		return id, nil
	}
	p.shipped[key] = fmt.Sprintf("trk-%d", len(p.shipped)+1)
	return p.shipped[key], nil
}

// deliver hands m to c like a broker: again while Redeliver says so.
func deliver(c *consumer.Consumer, m consumer.Message) (string, error) {
	for {
		id, err := c.Handle(context.Background(), m)
		again, after := consumer.Redeliver(err)
		if err == nil || !again {
			return id, err
		}
		time.Sleep(min(after, 20*time.Millisecond))
	}
}

// TestShipsOnce: 16 deliveries of one message ship one order, all see its
// tracking id; after a provider failure the redelivery ships; another
// order under a used key is dead-lettered.
func TestShipsOnce(t *testing.T) {
	opt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		t.Fatalf("REDIS_URL: %v\nstart Redis (in this repository: scripts/harness up && eval \"$(scripts/harness env)\")", err)
	}
	opt.DB = 14
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	p := &provider{shipped: map[string]string{}}
	c := consumer.New(idem.New(rdb, idem.Config{Lease: 5 * time.Second}), p)
	key := "ship-" + time.Now().Format("150405.000000000")
	m := consumer.Message{Tenant: "demo", Key: key, Item: "tea", Qty: 2}

	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range ids {
		wg.Go(func() {
			var err error
			if ids[i], err = deliver(c, m); err != nil {
				t.Errorf("delivery %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if len(p.shipped) != 1 || p.calls != 1 {
		t.Fatalf("%d shipments in %d provider calls, want 1 in 1", len(p.shipped), p.calls)
	}
	for i, id := range ids {
		if id != "trk-1" {
			t.Errorf("delivery %d got %q, want trk-1", i, id)
		}
	}

	p.down = true
	m.Key += "-b"
	if id, err := deliver(c, m); err != nil || id != "trk-2" {
		t.Errorf("after a provider failure: %q %v, want trk-2", id, err)
	}
	m.Qty = 3
	if _, err := deliver(c, m); !errors.Is(err, idem.ErrMismatch) {
		t.Errorf("another order under a used key: %v, want ErrMismatch (dead-letter)", err)
	}
}
