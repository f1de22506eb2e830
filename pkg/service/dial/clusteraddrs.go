package dial

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ParseClusterAddrs parses a node-address map (REDIS_CLUSTER_ADDRS), a
// comma-separated list of announced=dialled pairs of host:port, e.g.
// "redis-2:6379=127.0.0.1:26382,redis-3:6379=127.0.0.1:26383", into
// RedisTuning.ClusterAddrs. "" is a nil map (no node mapped). Every side must be a
// host:port with a port; an announced address may appear once. The error
// names the pair by its position (the map holds no credentials, but it
// is read like the URLs).
func ParseClusterAddrs(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for i, pair := range strings.Split(s, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return nil, fmt.Errorf("pair %d: want announced-host:port=dial-host:port", i+1)
		}
		for _, a := range []string{from, to} {
			if h, p, err := net.SplitHostPort(a); err != nil || h == "" || p == "" {
				return nil, fmt.Errorf("pair %d: %q is not host:port", i+1, a)
			}
		}
		if _, dup := m[from]; dup {
			return nil, fmt.Errorf("pair %d: %s is mapped twice", i+1, from)
		}
		m[from] = to
	}
	return m, nil
}

// mappedDialer is go-redis's own dialer for o (its timeout and TLS) that
// first rewrites an address found in addrs. It is set as
// ClusterOptions.Dialer, which go-redis uses for the seeds and for every
// node it learns from CLUSTER SLOTS or a redirect, so the client keeps
// the announced addresses as the nodes' names and only dials elsewhere.
func mappedDialer(o *redis.ClusterOptions, addrs map[string]string) func(context.Context, string, string) (net.Conn, error) {
	m := maps.Clone(addrs)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := m[addr]; ok {
			addr = to
		}
		// o as NewClusterClient completed it (its default DialTimeout)
		return redis.NewDialer(&redis.Options{DialTimeout: o.DialTimeout, TLSConfig: o.TLSConfig})(ctx, network, addr)
	}
}
