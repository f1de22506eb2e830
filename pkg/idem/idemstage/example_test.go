package idemstage_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemstage"
	"github.com/redis/go-redis/v9"
)

// A consumer ships an order message; the broker delivers it twice. The
// second delivery gets the stored tracking id and ships nothing. It runs
// against the Redis in REDIS_URL (database 11).
func Example() {
	opt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		fmt.Println("REDIS_URL:", err)
		return
	}
	opt.DB = 11
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ship := idemstage.New(idem.New(rdb, idem.Config{Lease: 10 * time.Second}),
		idemstage.Config{Stage: "ship", EndRetry: 5 * time.Second})
	key, _ := idem.NewKey("tenant_a", "order-"+strconv.FormatInt(time.Now().UnixNano(), 36))

	for range 2 { // the second delivery is the broker's redelivery
		done, err := ship.Do(context.Background(), key, "tea x2", func(ctx context.Context, a idemstage.Attempt) ([]byte, error) {
			fmt.Println("shipping under provider key", a.Key.Merchant()+":<key>")
			return []byte("trk-1"), nil // the provider's answer
		})
		if ip, ok := errors.AsType[*idem.InProgressError](err); ok {
			fmt.Println("redeliver after", ip.RetryAfter)
			continue
		}
		if err != nil {
			fmt.Println("redeliver:", err)
			continue
		}
		fmt.Printf("ack: %s (replayed %v)\n", done.Result, done.Replayed)
	}
	// Output:
	// shipping under provider key tenant_a:<key>
	// ack: trk-1 (replayed false)
	// ack: trk-1 (replayed true)
}
