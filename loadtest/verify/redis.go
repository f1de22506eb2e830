package verify

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncepay/oncepay/pkg/service/dial"
	"github.com/redis/go-redis/v9"
)

// matchRun is the SCAN pattern of the run's boundary records,
// idem:v1:{<merchant>:<run id>-*}, with glob characters in the run id
// escaped.
func matchRun(runID string) string {
	if runID == "" {
		return "idem:v1:*"
	}
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return "idem:v1:{*:" + r.Replace(runID) + "-*"
}

// readBoundary returns every stage of the run's boundary records and the
// Redis server's clock. On a Redis Cluster it scans every primary and
// reads the clock of one node (the primaries' clocks are the hosts').
func readBoundary(ctx context.Context, rdb redis.UniversalClient, runID string) ([]Stage, time.Time, error) {
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("redis TIME: %w", err)
	}
	var mu sync.Mutex
	var stages []Stage
	err = dial.ForEachPrimary(ctx, rdb, func(ctx context.Context, node *redis.Client) error {
		s, err := readNode(ctx, node, runID)
		mu.Lock()
		stages = append(stages, s...)
		mu.Unlock()
		return err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return stages, now, nil
}

// readNode returns every stage of the run's boundary records on one server.
func readNode(ctx context.Context, rdb *redis.Client, runID string) ([]Stage, error) {
	var stages []Stage
	iter := rdb.Scan(ctx, 0, matchRun(runID), 1000).Iterator()
	batch := make([]string, 0, 500)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		pipe := rdb.Pipeline()
		cmds := make([]*redis.MapStringStringCmd, len(batch))
		for i, k := range batch {
			cmds[i] = pipe.HGetAll(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("redis HGETALL: %w", err)
		}
		for i, k := range batch {
			stages = append(stages, parseStages(k, cmds[i].Val())...)
		}
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redis SCAN: %w", err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return stages, nil
}

// parseStages splits one record's fields, <stage>:<field>, into stages.
func parseStages(key string, fields map[string]string) []Stage {
	byStage := map[string]*Stage{}
	var order []string
	for f, v := range fields {
		name, field, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		st := byStage[name]
		if st == nil {
			st = &Stage{Key: key, Stage: name}
			byStage[name] = st
			order = append(order, name)
		}
		switch field {
		case "state":
			st.State = v
		case "owner":
			st.Owner = v
		case "lease":
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
				st.Lease = time.UnixMilli(ms)
			}
		case "attempt":
			st.Attempt, _ = strconv.Atoi(v)
		}
	}
	out := make([]Stage, 0, len(order))
	for _, name := range order {
		if byStage[name].State != "" {
			out = append(out, *byStage[name])
		}
	}
	return out
}
