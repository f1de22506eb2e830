// Package netfault injects network faults into one replica's path to one
// backing service, through Toxiproxy.
//
// Every replica (api-1, worker-2, ...) reaches each service it uses through
// its own Toxiproxy proxy, named "<replica>.<service>" (Name): worker-1
// dials worker-1.redis, never Redis itself. A fault adds toxics to one
// proxy, so it hits that replica's path only while every other replica
// still reaches the service directly (through its own, clean proxy). The
// local runtime creates these proxies (scripts/local); tests create their
// own (Injector.CreateProxy).
//
// Each fault returns an Undo that removes exactly the toxics it added:
//
//	Latency    latency toxic on the replies: each answer arrives d late
//	Partition  timeout toxic with timeout 0 on both directions: a blackhole
//	ResetPeer  reset_peer toxic on the replies: the service does the work,
//	           then the connection is cut (RST) before the answer arrives
//	Slow       latency with jitter on the replies plus a bandwidth cap
//
// A partition is a toxic, not a disabled proxy: disabling closes every
// connection and refuses new ones at once, which a client notices in
// microseconds (connection refused); a real partition drops packets, so the
// client learns of it only through its own timeouts, with connections that
// stay open and requests that are never answered. The timeout toxic with
// timeout 0 does that: it accepts connections and drops every byte until it
// is removed, and then closes the connections it held.
//
// # The fault driver
//
// The driver declares what it consumes, in its own package:
//
//	type Network interface {
//		Inject(ctx context.Context, kind, target string, d time.Duration) (undo func() error, err error)
//	}
//
// and gets an *Injector from New($TOXIPROXY_URL) (scripts/local env
// exports it). A network Step maps to one Inject call, held for the
// step's window and then undone: its action names the kind
// (KindLatency, KindPartition, KindResetPeer, KindSlow), its target the
// proxy ("worker-1.redis", "worker-2.psp", "api-1.postgres"), and its
// delay is d (latency, slow). Undo is safe to call twice, so the driver
// may also undo every fault it still holds when the run ends.
package netfault
