package netfault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// The services a replica's proxies lead to.
const (
	Redis    = "redis"
	Postgres = "postgres"
	PSP      = "psp"
)

// The fault kinds, as Inject names them.
const (
	KindLatency   = "latency"
	KindPartition = "partition"
	KindResetPeer = "reset_peer"
	KindSlow      = "slow"
)

// Name returns the name of replica's proxy to service: "<replica>.<service>".
func Name(replica, service string) string { return replica + "." + service }

// Undo ends a fault: it removes the toxics the fault added. It is safe to
// call more than once; calls after the first successful one do nothing.
type Undo func() error

// Injector adds and removes toxics on a Toxiproxy server. It is safe for
// concurrent use; two faults of the same kind on one proxy at once are
// refused (the toxic's name is taken).
type Injector struct {
	c *toxiproxy.Client
}

// New returns an Injector for the Toxiproxy API at apiURL
// (http://127.0.0.1:8474 or 127.0.0.1:8474).
func New(apiURL string) *Injector { return &Injector{c: toxiproxy.NewClient(apiURL)} }

// CreateProxy creates replica's proxy to service, listening on listen
// ("127.0.0.1:0" picks a free port) and forwarding to upstream, and returns
// the address it listens on.
func (in *Injector) CreateProxy(replica, service, listen, upstream string) (string, error) {
	p, err := in.c.CreateProxy(Name(replica, service), listen, upstream)
	if err != nil {
		return "", fmt.Errorf("create proxy %s: %w", Name(replica, service), err)
	}
	return p.Listen, nil
}

// Latency delays every answer on replica's path to service by d: the
// requests arrive at once, the replies d late. With d above the client's
// timeout (the boundary's IDEM_TIMEOUT on the Redis path) every call on
// that path times out while the service itself does the work.
func (in *Injector) Latency(replica, service string, d time.Duration) (Undo, error) {
	return in.add(replica, service, toxic{"netfault_latency", "latency", "downstream", toxiproxy.Attributes{"latency": ms(d)}})
}

// Partition cuts replica's path to service in both directions without
// closing anything: connections open, and nothing sent either way arrives,
// until Undo (which then closes the connections that were held).
func (in *Injector) Partition(replica, service string) (Undo, error) {
	return in.add(replica, service,
		toxic{"netfault_partition_up", "timeout", "upstream", toxiproxy.Attributes{"timeout": 0}},
		toxic{"netfault_partition_down", "timeout", "downstream", toxiproxy.Attributes{"timeout": 0}})
}

// ResetPeer cuts every connection on replica's path to service as soon as
// the service starts to answer: the request arrives and is acted on, its
// answer is lost. Connections opened while the fault lasts are reset (TCP
// RST, "connection reset by peer"); those already open are closed (EOF),
// since Toxiproxy sets SO_LINGER 0 only on new ones. On the psp path this
// is a charge whose outcome the worker does not know.
func (in *Injector) ResetPeer(replica, service string) (Undo, error) {
	return in.add(replica, service, toxic{"netfault_reset_peer", "reset_peer", "downstream", toxiproxy.Attributes{"timeout": 0}})
}

// slowRate is Slow's bandwidth cap, in KB/s: far above what oncepay's
// queries move, so it shapes only a large result.
const slowRate = 256

// Slow makes replica's path to service slow, not broken: every answer is
// delayed by d ± d/4, and the replies are capped at 256 KB/s.
func (in *Injector) Slow(replica, service string, d time.Duration) (Undo, error) {
	return in.add(replica, service,
		toxic{"netfault_slow_latency", "latency", "downstream", toxiproxy.Attributes{"latency": ms(d), "jitter": ms(d / 4)}},
		toxic{"netfault_slow_bandwidth", "bandwidth", "downstream", toxiproxy.Attributes{"rate": slowRate}})
}

// Inject applies the fault kind (KindLatency, KindPartition,
// KindResetPeer, KindSlow) to the proxy target ("worker-1.redis"); d is
// the delay of latency and slow, ignored by the others. It is the one entry
// point of the fault driver (see Network).
func (in *Injector) Inject(ctx context.Context, kind, target string, d time.Duration) (func() error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	replica, service, err := Split(target)
	if err != nil {
		return nil, err
	}
	var undo Undo
	switch kind {
	case KindLatency:
		undo, err = in.Latency(replica, service, d)
	case KindPartition:
		undo, err = in.Partition(replica, service)
	case KindResetPeer:
		undo, err = in.ResetPeer(replica, service)
	case KindSlow:
		undo, err = in.Slow(replica, service, d)
	default:
		return nil, fmt.Errorf("netfault: unknown fault kind %q (latency, partition, reset_peer, slow)", kind)
	}
	if err != nil {
		return nil, err
	}
	return undo, nil
}

// Split splits a proxy name "<replica>.<service>" at its last dot.
func Split(target string) (replica, service string, err error) {
	for i := len(target) - 1; i > 0; i-- {
		if target[i] == '.' {
			if i == len(target)-1 {
				break
			}
			return target[:i], target[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("netfault: target %q is not <replica>.<service>", target)
}

type toxic struct {
	name, kind, stream string
	attrs              toxiproxy.Attributes
}

// add adds the toxics to replica's proxy to service, all or none, and
// returns the Undo that removes them.
func (in *Injector) add(replica, service string, toxics ...toxic) (Undo, error) {
	name := Name(replica, service)
	p, err := in.c.Proxy(name)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	var added []string
	remove := func() error {
		var errs []error
		for _, n := range added {
			if err := p.RemoveToxic(n); err != nil && !notFound(err) {
				errs = append(errs, fmt.Errorf("remove toxic %s from %s: %w", n, name, err))
			}
		}
		return errors.Join(errs...)
	}
	for _, t := range toxics {
		if _, err := p.AddToxic(t.name, t.kind, t.stream, 1, t.attrs); err != nil {
			err = fmt.Errorf("add toxic %s to %s: %w", t.name, name, err)
			return nil, errors.Join(err, remove())
		}
		added = append(added, t.name)
	}
	var mu sync.Mutex
	done := false
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return nil
		}
		if err := remove(); err != nil {
			return err
		}
		done = true
		return nil
	}, nil
}

func notFound(err error) bool {
	var api *toxiproxy.ApiError
	return errors.As(err, &api) && api.Status == http.StatusNotFound
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
