package process_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/loadtest/process"
)

// TestStallRedisFreezesTheBusyPrimary: in a Redis Cluster (the ha
// topology) stall-redis freezes the primary whose slot holds the keys in
// use, not any node: every key of the test shares one hash tag, so one
// primary of three holds them all. harness status maps each node's port to
// a stand-in process, so the test sees which one was frozen without
// stopping Redis. A node picked at random would be another one two times
// in three; the test asks five times.
func TestStallRedisFreezesTheBusyPrimary(t *testing.T) {
	redistest.Integration(t)
	c := redistest.StartCluster(t)
	cc := c.Client()
	ctx := context.Background()
	for i := range 50 {
		if err := cc.Set(ctx, fmt.Sprintf("idem:{busy}:%d", i), "x", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slot, err := cc.ClusterKeySlot(ctx, "idem:{busy}:0").Result()
	if err != nil {
		t.Fatal(err)
	}
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var busy string
	for _, sh := range shards {
		for _, r := range sh.Slots {
			for _, n := range sh.Nodes {
				if r.Start <= slot && slot <= r.End && n.Role == "master" {
					busy = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(n.Port)))
				}
			}
		}
	}

	var status strings.Builder
	want := 0
	for i, n := range c.Nodes {
		p := startSleep(t, t.TempDir())
		_, port, _ := net.SplitHostPort(n.Addr())
		fmt.Fprintf(&status, "redis-%d    running  pid %-8d port %-6s (master)\n", i+1, p.PID, port)
		if n.Addr() == busy {
			want = p.PID
		}
	}
	if want == 0 {
		t.Fatalf("no node serves %s", busy)
	}
	b := process.New(process.Config{Harness: statusHarness(t, status.String()),
		HarnessEnv: []string{"PATH=" + os.Getenv("PATH")}, Redis: cc})
	for range 5 {
		pid, err := b.StallService(ctx, "redis", time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if pid != want {
			t.Fatalf("stall-redis froze pid %d, want %d (the primary of slot %d, %s)", pid, want, slot, busy)
		}
		if s := state(t, pid); s == "T" {
			t.Fatalf("pid %d still stopped after the stall", pid)
		}
	}
	port, err := process.SlotPrimaryPort(ctx, cc)
	if _, p, _ := net.SplitHostPort(busy); err != nil || strconv.Itoa(port) != p {
		t.Errorf("SlotPrimaryPort = %d, %v; want %s", port, err, p)
	}
}
