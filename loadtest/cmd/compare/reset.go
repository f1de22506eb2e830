package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/oncepay/oncepay/loadtest/verify"
	"github.com/oncepay/oncepay/pkg/idem/naive"
	"github.com/oncepay/oncepay/pkg/service/dial"
)

// services are the runtime's backing services, as scripts/local env names
// them.
type services struct {
	RedisMode, RedisURL, DatabaseURL, AMQPURL string
	RedisAddrs                                map[string]string // REDIS_CLUSTER_ADDRS (package dial)
	PSPAdminURL, PSPToken                     string            // the psp's admin listener and its bearer token
	Queues                                    verify.Queues
}

func servicesOf(env map[string]string) (services, error) {
	s := services{RedisMode: env["REDIS_MODE"], RedisURL: env["REDIS_URL"], DatabaseURL: env["DATABASE_URL"], AMQPURL: env["AMQP_URL"],
		PSPAdminURL: env["PSP_ADMIN_URL"], PSPToken: env["PSP_ADMIN_TOKEN"]}
	if s.RedisURL == "" || s.DatabaseURL == "" || s.AMQPURL == "" || s.PSPAdminURL == "" || s.PSPToken == "" {
		return services{}, errors.New("scripts/local env did not name REDIS_URL, DATABASE_URL, AMQP_URL, PSP_ADMIN_URL and PSP_ADMIN_TOKEN")
	}
	addrs, err := dial.ParseClusterAddrs(env["REDIS_CLUSTER_ADDRS"])
	if err != nil {
		return services{}, fmt.Errorf("REDIS_CLUSTER_ADDRS: %w", err)
	}
	s.RedisAddrs = addrs
	var delays []time.Duration
	for _, d := range strings.Split(env["WORKER_RETRY_DELAYS"], ",") {
		if v, err := time.ParseDuration(strings.TrimSpace(d)); err == nil {
			delays = append(delays, v)
		}
	}
	s.Queues = verify.DefaultQueues("payments.charge", delays)
	return s, nil
}

// reset gives the next run a clean slate: Redis flushed, payments, outbox
// and charge_takeovers truncated, every queue purged, the psp ledger
// emptied and its fault knobs set to failAfter with the run's seed.
func reset(ctx context.Context, s services, failAfter float64, seed int) error {
	rdb, err := dial.Redis(s.RedisMode, s.RedisURL, dial.RedisTuning{ClusterAddrs: s.RedisAddrs})
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	defer rdb.Close()
	if err := dial.ForEachPrimary(ctx, rdb, func(ctx context.Context, node *redis.Client) error {
		return node.FlushDB(ctx).Err()
	}); err != nil {
		return fmt.Errorf("redis FLUSHDB: %w", err)
	}

	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `TRUNCATE payments, outbox, charge_takeovers`); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}

	if err := purge(s.AMQPURL, append(append([]string{s.Queues.Main}, s.Queues.Retry...), s.Queues.DeadLetter)); err != nil {
		return err
	}
	if err := psp(ctx, s, http.MethodDelete, "/admin/ledger", nil); err != nil {
		return err
	}
	return pspFaults(ctx, s, failAfter, seed)
}

// pspFaults sets the psp's fail_after_rate and restarts its fault RNG with
// seed, so every run draws the same faults.
func pspFaults(ctx context.Context, s services, failAfter float64, seed int) error {
	body, _ := json.Marshal(map[string]any{"fail_after_rate": failAfter, "seed": seed})
	return psp(ctx, s, http.MethodPut, "/admin/config", body)
}

// psp sends one request to path on the psp's admin listener, with its token.
func psp(ctx context.Context, s services, method, path string, body []byte) error {
	url := s.PSPAdminURL + path
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.PSPToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("psp %s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("psp %s %s: %s", method, url, resp.Status)
	}
	return nil
}

// purge empties each queue; a queue that does not exist yet is fine.
func purge(url string, queues []string) error {
	conn, err := dial.AMQP(url, amqp.Config{}, 5*time.Second)
	if err != nil {
		return fmt.Errorf("rabbitmq: %w", err)
	}
	defer conn.Close()
	for _, q := range queues {
		ch, err := conn.Channel()
		if err != nil {
			return fmt.Errorf("rabbitmq channel: %w", err)
		}
		_, err = ch.QueuePurge(q, false)
		var aerr *amqp.Error
		if err != nil && !(errors.As(err, &aerr) && aerr.Code == amqp.NotFound) {
			return fmt.Errorf("purge %s: %w", q, err)
		}
		ch.Close()
	}
	return nil
}

// markersLeft counts the naive strategies' "in progress" markers of run
// runID still in Redis: claims nobody completed or released. On a Redis
// Cluster it scans every primary.
func markersLeft(ctx context.Context, s services, runID string) (int, error) {
	rdb, err := dial.Redis(s.RedisMode, s.RedisURL, dial.RedisTuning{ClusterAddrs: s.RedisAddrs})
	if err != nil {
		return 0, err
	}
	defer rdb.Close()
	var n atomic.Int64
	err = dial.ForEachPrimary(ctx, rdb, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, naive.Prefix+"{*:"+runID+"-*", 1000).Iterator()
		for iter.Next(ctx) {
			if strings.HasSuffix(iter.Val(), ":lock") {
				continue
			}
			v, err := node.Get(ctx, iter.Val()).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if v == naive.Marker {
				n.Add(1)
			}
		}
		return iter.Err()
	})
	return int(n.Load()), err
}
