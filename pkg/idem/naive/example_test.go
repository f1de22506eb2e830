package naive_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/naive"
	"github.com/redis/go-redis/v9"
)

// Two deliveries of one message meet get-then-set: both find nothing
// stored, so both run the charge. oncepay's boundary lets one through and
// answers the other "in progress". It runs against the Redis in REDIS_URL
// (database 5).
func ExampleGetThenSet() {
	opt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		fmt.Println("REDIS_URL:", err)
		return
	}
	opt.DB = 5
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	key, _ := idem.NewKey("merchant_a", "order-"+strconv.FormatInt(time.Now().UnixNano(), 36))

	naiveStore := naive.NewGetThenSet(rdb, idem.Config{})
	for _, delivery := range []string{"first", "second"} {
		c, _ := naiveStore.Begin(ctx, key, "charge", "fp")
		fmt.Printf("get-then-set, %s delivery: %s\n", delivery, c.Outcome)
	}

	real := idem.New(rdb, idem.Config{})
	for _, delivery := range []string{"first", "second"} {
		c, err := real.Begin(ctx, key, "charge", "fp")
		switch {
		case errors.Is(err, idem.ErrInProgress):
			fmt.Printf("oncepay, %s delivery: in progress\n", delivery)
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Printf("oncepay, %s delivery: %s\n", delivery, c.Outcome)
		}
	}
	// Output:
	// get-then-set, first delivery: acquired
	// get-then-set, second delivery: acquired
	// oncepay, first delivery: acquired
	// oncepay, second delivery: in progress
}
