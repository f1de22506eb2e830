package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/pace"
	"github.com/redis/go-redis/v9"
)

type redisConfig struct {
	URL                     string
	Rate                    float64
	Duration                time.Duration
	Workers                 int
	BeginPath, CompletePath string
}

// runRedis runs begin + complete by EVALSHA on a fresh key per payment, the
// boundary's two round trips, through a bare go-redis client.
func runRedis(ctx context.Context, cfg redisConfig) (pace.Result, error) {
	opt, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return pace.Result{}, err
	}
	opt.PoolSize = cfg.Workers
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	load := func(path string) (string, error) {
		src, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		return rdb.ScriptLoad(ctx, string(src)).Result()
	}
	beginSHA, err := load(cfg.BeginPath)
	if err != nil {
		return pace.Result{}, fmt.Errorf("load begin script: %w", err)
	}
	completeSHA, err := load(cfg.CompletePath)
	if err != nil {
		return pace.Result{}, fmt.Errorf("load complete script: %w", err)
	}
	prefix := "idem:v1:{ceiling:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	result := `{"status":202,"body":"eyJpZCI6InBheV8xIn0="}`
	const lease, retention = 10000, 60000 // ms; the keys expire a minute after the run
	return pace.Run(ctx, pace.Config{Rate: cfg.Rate, Duration: cfg.Duration, Workers: cfg.Workers},
		func(ctx context.Context, i int) error {
			key := []string{prefix + strconv.Itoa(i) + "}"}
			if err := rdb.EvalSha(ctx, beginSHA, key, "api", "owner", "fp", lease, retention).Err(); err != nil {
				return err
			}
			return rdb.EvalSha(ctx, completeSHA, key, "api", "owner", result, retention).Err()
		}), nil
}
