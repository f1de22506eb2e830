package netfault_test

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/oncepay/oncepay/loadtest/netfault"
)

// Partition worker-1 from Redis for ten seconds on the local runtime,
// while worker-2 still reaches it.
func ExampleInjector_Inject() {
	in := netfault.New(os.Getenv("TOXIPROXY_URL")) // scripts/local env
	undo, err := in.Inject(context.Background(), netfault.KindPartition, netfault.Name("worker-1", netfault.Redis), 0)
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	if err := undo(); err != nil {
		log.Fatal(err)
	}
}
