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
package netfault
