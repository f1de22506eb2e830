package dial

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"
)

// The values of REDIS_MODE.
const (
	// RedisSingle: one Redis (or a proxy in front of one); REDIS_URL is
	// redis.ParseURL's form. The default.
	RedisSingle = "single"
	// RedisCluster: a Redis Cluster; REDIS_URL is redis.ParseClusterURL's
	// form, redis://[user:pass@]host1:port?addr=host2:port&addr=host3:port,
	// the seed nodes.
	RedisCluster = "cluster"
	// RedisSentinel: a primary and its replicas watched by Sentinels;
	// REDIS_URL is redis.ParseFailoverURL's form,
	// redis://[user:pass@]sentinel1:port?addr=sentinel2:port&master_name=NAME.
	RedisSentinel = "sentinel"
)

// RedisModes lists the values REDIS_MODE accepts.
var RedisModes = []string{RedisSingle, RedisCluster, RedisSentinel}

// RedisTuning is what a caller sets beyond what REDIS_URL's query says
// (pool size, timeouts and retries come from the URL, in every mode).
type RedisTuning struct {
	// ContextTimeout sets go-redis's ContextTimeoutEnabled: a command's
	// context deadline bounds its network reads and writes.
	ContextTimeout bool
	// ClusterAddrs maps the address a Redis Cluster node announces
	// (host:port, as CLUSTER SLOTS and MOVED/ASK redirects name it) to the
	// address to dial instead: for a client outside the network whose names
	// the nodes announce (the host side of Docker Compose). Addresses not
	// in the map are dialled as they are. Cluster mode only: with another
	// mode a non-empty map is an error. ParseClusterAddrs reads
	// REDIS_CLUSTER_ADDRS into it.
	ClusterAddrs map[string]string
}

// CheckRedis reports whether mode and rawURL make a Redis client, without
// building one. The error names what is wrong and never quotes the URL.
func CheckRedis(mode, rawURL string) error {
	return CheckRedisTuned(mode, rawURL, RedisTuning{})
}

// CheckRedisTuned is CheckRedis with t's settings checked as well (a
// node-address map outside cluster mode is an error).
func CheckRedisTuned(mode, rawURL string, t RedisTuning) error {
	_, err := redisOptions(mode, rawURL, t)
	return err
}

// Redis returns the client for mode (RedisSingle, RedisCluster or
// RedisSentinel; "" is RedisSingle) and rawURL: a *redis.Client, a
// *redis.ClusterClient or a failover *redis.Client (it follows the
// Sentinels' primary). The error, as CheckRedis's, never quotes the URL.
func Redis(mode, rawURL string, t RedisTuning) (redis.UniversalClient, error) {
	o, err := redisOptions(mode, rawURL, t)
	if err != nil {
		return nil, err
	}
	switch o := o.(type) {
	case *redis.ClusterOptions:
		return redis.NewClusterClient(o), nil
	case *redis.FailoverOptions:
		return redis.NewFailoverClient(o), nil
	default:
		return redis.NewClient(o.(*redis.Options)), nil
	}
}

func redisOptions(mode, rawURL string, t RedisTuning) (any, error) {
	if len(t.ClusterAddrs) > 0 && mode != RedisCluster {
		return nil, fmt.Errorf("a node-address map is for Redis Cluster only, not mode %q", cmp.Or(mode, RedisSingle))
	}
	switch mode {
	case RedisSingle, "":
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, urlError(err)
		}
		o.ContextTimeoutEnabled = t.ContextTimeout
		return o, nil
	case RedisCluster:
		o, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, urlError(err)
		}
		// ParseClusterURL ignores a database number; a cluster has db 0 only
		if u, err := url.Parse(rawURL); err == nil && u.Path != "" && u.Path != "/" && u.Path != "/0" {
			return nil, errors.New("a Redis Cluster has database 0 only: drop the /db of the URL")
		}
		o.ContextTimeoutEnabled = t.ContextTimeout
		if len(t.ClusterAddrs) > 0 {
			o.Dialer = mappedDialer(o, t.ClusterAddrs)
		}
		return o, nil
	case RedisSentinel:
		o, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, urlError(err)
		}
		if o.MasterName == "" {
			return nil, errors.New("sentinel mode needs master_name=NAME in the URL's query")
		}
		o.ContextTimeoutEnabled = t.ContextTimeout
		return o, nil
	default:
		return nil, fmt.Errorf("unknown Redis mode %q: want one of %v", mode, RedisModes)
	}
}

// urlError keeps go-redis's parse error unless it is net/url's, which
// quotes the whole URL, password included.
func urlError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return errors.New("not a valid URL (the parse error is not shown: it quotes the password)")
	}
	return err
}

// ForEachPrimary calls fn with a client of every primary rdb writes to:
// each primary of a *redis.ClusterClient (concurrently, as
// ClusterClient.ForEachMaster), or rdb itself when it is a *redis.Client
// (single or failover). For the commands that act on one server (FLUSHALL,
// INFO, DBSIZE, SCAN, CONFIG, DEBUG). Another client type is an error.
func ForEachPrimary(ctx context.Context, rdb redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	default:
		return fmt.Errorf("dial: %T: not a *redis.Client or *redis.ClusterClient", rdb)
	}
}
