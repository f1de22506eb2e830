package fault

import (
	"context"
	"time"
)

// Backend carries out faults on one runtime: local processes, containers
// (docker compose) or pods (kind). Replica and service names are the
// runtime-neutral ones: api-1, worker-2, redis, rabbitmq, postgres.
type Backend interface {
	// KillReplica ends one replica abruptly, the way a crash or an OOM
	// kill does (SIGKILL, docker kill, pod delete with no grace), and
	// returns the pid it killed (0 if the runtime has none). Whatever
	// supervises the replica starts a new one; KillReplica does not wait
	// for that.
	KillReplica(ctx context.Context, replica string) (pid int, err error)
	// RestartService stops a backing service cleanly and starts it again,
	// returning once it answers.
	RestartService(ctx context.Context, service string) error
	// FlushRedis deletes every key in every Redis database.
	FlushRedis(ctx context.Context) error
}

// ServiceKiller is a Backend that can crash a backing service.
type ServiceKiller interface {
	// KillService sends SIGKILL to the service (and its children), starts
	// it again and returns once it answers.
	KillService(ctx context.Context, service string) error
}

// Freezer is a Backend that can stop a replica's process and let it go on.
// The driver freezes a replica before it trusts a look at its work in
// flight: a stopped process cannot answer, so what is in flight while it
// is frozen is what a kill cuts off. Pauses need it too.
type Freezer interface {
	// Freeze stops the replica (SIGSTOP) and returns the pid stopped.
	Freeze(ctx context.Context, replica string) (pid int, err error)
	// Thaw lets the stopped pid go on (SIGCONT); a pid that is gone by
	// then is no error.
	Thaw(pid int) error
}

// QueueDeleter is a Backend that can delete a broker queue.
type QueueDeleter interface {
	// DeleteQueue deletes the named queue with its messages, whether or not
	// it has consumers, and returns how many messages it held.
	DeleteQueue(ctx context.Context, queue string) (messages int, err error)
}

// Outager is a Backend that can take the psp down.
type Outager interface {
	// PSPOutage makes the psp refuse every call for d (503, nothing
	// charged), then puts its configuration back, also when ctx ends.
	PSPOutage(ctx context.Context, d time.Duration) error
}

// Staller is a Backend that can stall a backing service.
type Staller interface {
	// StallService stops the service's process (SIGSTOP) for d, then lets
	// it go on (SIGCONT), also when ctx ends first, and returns the pid it
	// stopped.
	StallService(ctx context.Context, service string, d time.Duration) (pid int, err error)
}

// Rejecter is a Backend that can make the psp reject charges.
type Rejecter interface {
	// PSPReject makes the psp reject the share (0..1] of charge calls
	// permanently (a 4xx with its reason, nothing charged) for d, then
	// puts its configuration back, also when ctx ends.
	PSPReject(ctx context.Context, share float64, d time.Duration) error
}

// Failoverer is a Backend of the HA topology that carries out its failover
// faults. Each returns what the fault did and what it cost.
type Failoverer interface {
	// FailoverRedis SIGKILLs the Redis Cluster primary serving a slot the
	// load uses, waits until a write to that slot succeeds again (its
	// replica took over: Cost.RefusedMS) and starts the old node again as
	// a replica.
	FailoverRedis(ctx context.Context) (Cost, error)
	// MigrateSlot moves a block of slots, around a slot the load uses,
	// from their primary to another one while the load runs.
	MigrateSlot(ctx context.Context) (Cost, error)
	// KillQueueLeader SIGKILLs the RabbitMQ node leading queue and starts
	// it again after down.
	KillQueueLeader(ctx context.Context, queue string, down time.Duration) (Cost, error)
	// PartitionQueueLeader cuts the node leading queue off from the other
	// nodes for d, then heals the partition.
	PartitionQueueLeader(ctx context.Context, queue string, d time.Duration) (Cost, error)
}

// PostgresFailoverer is a Backend of the HA topology whose Postgres runs
// under Patroni. Each fault returns what it did and what it cost.
type PostgresFailoverer interface {
	// FailoverPostgres SIGKILLs the leader's Patroni and Postgres, waits
	// for a new primary (Cost.PromotedMS) that takes writes
	// (Cost.RefusedMS), then starts the node again as a replica. A
	// positive lag first drops the leader's replication stream for lag
	// under load, so that its replicas are behind at the kill.
	FailoverPostgres(ctx context.Context, lag time.Duration) (Cost, error)
	// SwitchoverPostgres hands the primary over to the synchronous
	// standby (planned) and waits until the old one is a replica.
	SwitchoverPostgres(ctx context.Context) (Cost, error)
	// PartitionPostgres cuts the leader from the store and the other
	// nodes for d while its Postgres keeps serving (Cost.DemotedMS: until
	// it stopped being a primary), heals, and waits until it is a replica.
	PartitionPostgres(ctx context.Context, d time.Duration) (Cost, error)
}

// Cost is what a failover fault did and cost, as the backend measured it.
type Cost struct {
	Node string `json:"node"`           // the node it hit: redis-2, rabbitmq-3
	Slot int    `json:"slot,omitempty"` // Redis: the slot in use it aimed at
	// Slots and Keys: a slot migration's slots and the keys it moved.
	Slots int `json:"slots,omitempty"`
	Keys  int `json:"keys,omitempty"`
	// RefusedMS is how long writes were refused: Redis, until a write to
	// the slot succeeded again; RabbitMQ, until another node led the queue
	// (seen every 2 s). -1: not measured or never.
	RefusedMS int64 `json:"refused_ms"`
	// PromotedMS (Postgres): until another node was leader and out of
	// recovery; DemotedMS (a partition): until the cut-off leader was no
	// primary any more. -1: never.
	PromotedMS int64  `json:"promoted_ms,omitempty"`
	DemotedMS  int64  `json:"demoted_ms,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// Prober tells whether a replica has work in flight right now: n units of
// work (requests, charges; 0 means idle) and what was looked at, for the
// fault log.
type Prober interface {
	InFlight(ctx context.Context, replica string) (n int, evidence string, err error)
}
