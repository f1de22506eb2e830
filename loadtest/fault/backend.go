package fault

import "context"

// Backend carries out faults on one runtime: local processes now,
// containers (docker compose) and pods (kind) later. Replica and service
// names are the runtime-neutral ones: api-1, worker-2, redis, rabbitmq.
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

// Prober tells whether a replica has work in flight right now: n units of
// work (requests, charges; 0 means idle) and what was looked at, for the
// fault log.
type Prober interface {
	InFlight(ctx context.Context, replica string) (n int, evidence string, err error)
}
