package idem_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

// The main flow of a stage: Begin, do the work while the lease is kept,
// Complete; a retry of the same request is answered from the stored result.
// It runs against the Redis in REDIS_URL (database 1).
func Example() {
	opt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		fmt.Println("REDIS_URL:", err)
		return
	}
	opt.DB = 1
	opt.ContextTimeoutEnabled = true // let the per-call timeout bound reads too
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	store := idem.New(rdb, idem.Config{Lease: 10 * time.Second, Timeout: 500 * time.Millisecond})
	ctx := context.Background()

	raw, _ := idem.ParseKey(`"order-` + strconv.FormatInt(time.Now().UnixNano(), 36) + `"`)
	key, _ := idem.NewKey("merchant_a", raw)
	fp, _ := idem.Fingerprint("POST", "/v1/payments", []byte(`{"amount": 1000, "currency": "EUR"}`))

	for range 2 { // the second iteration is the client's retry
		claim, err := store.Begin(ctx, key, "api", fp)
		switch {
		case errors.Is(err, idem.ErrInProgress):
			fmt.Println("409, retry later")
			continue
		case err != nil:
			fmt.Println("fail closed:", err)
			return
		case claim.Outcome == idem.Completed:
			var r idem.Response
			_ = r.UnmarshalBinary(claim.Result)
			fmt.Printf("replayed %d %s\n", r.Status, r.Body)
			continue
		}
		work, stop := claim.Lease.Keep(ctx)
		_ = work // ... charge, write the database, using work as the context ...
		stop()
		result, _ := idem.Response{Status: 202, Body: []byte(`{"id":"pay_1"}`)}.MarshalBinary()
		if err := claim.Lease.Complete(ctx, result); err != nil {
			fmt.Println("complete:", err)
			return
		}
		fmt.Println("acquired, worked, completed; attempt", claim.Attempt)
	}
	// Output:
	// acquired, worked, completed; attempt 1
	// replayed 202 {"id":"pay_1"}
}

func ExampleParseKey() {
	for _, h := range []string{`abc-123`, `"abc-123"`, `has space`, ``} {
		k, err := idem.ParseKey(h)
		fmt.Printf("%q -> %q %v\n", h, k, err)
	}
	// Output:
	// "abc-123" -> "abc-123" <nil>
	// "\"abc-123\"" -> "abc-123" <nil>
	// "has space" -> "" idem: invalid key: byte 0x20 at offset 3 is not visible ASCII
	// "" -> "" idem: invalid key: empty
}
