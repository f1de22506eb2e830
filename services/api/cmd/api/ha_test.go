package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/oncepay/oncepay/internal/redistest"
	"github.com/oncepay/oncepay/internal/testenv"
)

// On a Redis Cluster (REDIS_MODE=cluster, three seed nodes), 50 identical
// requests at once create one payment: one 202, the others replays or
// 409s, one row, one outbox row, and the boundary record in the cluster.
// Not parallel: the Cluster uses the fixed REDIS_HA_PORTS.
func TestClusterConcurrentIdenticalRequests(t *testing.T) {
	c := redistest.StartCluster(t)
	seeds := c.Addrs()
	a := startAPI(t, apiOptions{env: map[string]string{
		"REDIS_MODE": "cluster",
		"REDIS_URL":  "redis://" + seeds[0] + "?addr=" + seeds[1] + "&addr=" + seeds[2],
	}})
	key := testenv.Name(t, "k")
	fresh := 0
	for _, r := range a.postAtOnce(t, key, 50) {
		switch {
		case r.Status == http.StatusAccepted && r.Header.Get("Idempotent-Replayed") == "":
			fresh++
		case r.Status == http.StatusAccepted, r.Status == http.StatusConflict:
		default:
			t.Errorf("unexpected answer %d %s", r.Status, r.Body)
		}
	}
	if fresh != 1 {
		t.Errorf("%d first answers, want exactly 1", fresh)
	}
	if got := a.count(t, `SELECT count(*) FROM payments WHERE merchant_id = $1 AND idempotency_key = $2`, a.merchantA, key); got != 1 {
		t.Errorf("%d payment rows, want 1", got)
	}
	if got := a.count(t, `SELECT count(*) FROM outbox WHERE merchant_id = $1 AND idempotency_key = $2`, a.merchantA, key); got != 1 {
		t.Errorf("%d outbox rows, want 1", got)
	}
	hash := "idem:v1:{" + a.merchantA + ":" + key + "}"
	if n, err := c.Client().Exists(context.Background(), hash).Result(); err != nil || n != 1 {
		t.Errorf("boundary record %s in the cluster: %d, %v; want it there", hash, n, err)
	}
	if n, _ := a.rdb.Exists(context.Background(), hash).Result(); n != 0 {
		t.Errorf("boundary record %s in the single Redis: the api did not use the cluster", hash)
	}
}
