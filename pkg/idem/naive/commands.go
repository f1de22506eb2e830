package naive

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Commands is the part of a go-redis client the strategies use
// (*redis.Client, *redis.ClusterClient). Every strategy key carries the
// operation's hash tag, so a cluster keeps one operation's keys together.
type Commands interface {
	Get(ctx context.Context, key string) *redis.StringCmd
	Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}

// storeResult returns a Complete that writes result over whatever key
// holds, kept for the retention: no owner, no state check.
func storeResult(rdb Commands, key string, retention time.Duration) func(context.Context, []byte) error {
	return func(ctx context.Context, result []byte) error {
		return rdb.Set(ctx, key, result, retention).Err()
	}
}

// deleteKey returns a Release that deletes key, whoever wrote it.
func deleteKey(rdb Commands, key string) func(context.Context) error {
	return func(ctx context.Context) error { return rdb.Del(ctx, key).Err() }
}

// nothing is a Release with nothing to give back.
func nothing(context.Context) error { return nil }
