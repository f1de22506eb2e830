package fault

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// ErrUnknownAction is returned by Driver.Do for an action it does not know.
var ErrUnknownAction = errors.New("unknown fault action")

// ErrUnsupported is returned by Driver.Do for an action the runtime's
// backend cannot carry out.
var ErrUnsupported = errors.New("fault not supported on this runtime")

// ChargeQueue is the queue a delete-queue fault deletes.
const ChargeQueue = "payments.charge"

// DriverConfig tunes the wait for work in flight before a fault.
type DriverConfig struct {
	WaitInFlight time.Duration // give up waiting after this long and apply the fault anyway (default 2s)
	Poll         time.Duration // how often to look (default 5ms)
	// APIs and Workers are the replicas probed for a fault of a service
	// (AimRequest: the APIs, AimCharge: the Workers, AimAny: both).
	APIs, Workers []string
	// OnEvent, if set, is called with every logged event (e.g. to show it
	// to a person), after it was written to the log.
	OnEvent func(Event)
	// Network applies the network actions; nil makes them ErrUnsupported.
	Network Network
}

// Network injects a fault into one replica's path to one service
// (loadtest/netfault's Injector, over the local runtime's Toxiproxy).
type Network interface {
	// Inject applies kind (latency, partition, reset_peer, slow) to the
	// path target ("worker-1.redis") with delay d (latency, slow) and
	// returns the undo that ends it.
	Inject(ctx context.Context, kind, target string, d time.Duration) (undo func() error, err error)
}

// Driver applies faults through a Backend and logs each one. It is safe for
// concurrent use: faults may overlap (a kill while RabbitMQ restarts).
type Driver struct {
	backend Backend
	prober  Prober
	events  *EventLog
	log     *slog.Logger
	cfg     DriverConfig
	now     func() time.Time

	// clusters holds one token per HA cluster (redis, rabbitmq): a failover
	// fault takes it for its whole run, so two never overlap on one cluster.
	clusters map[string]chan struct{}

	mu      sync.Mutex
	held    map[int]func() error // the undos of network faults in force
	nextID  int
	stopped chan struct{} // closed by Close
}

// NewDriver returns a driver over backend and prober that records to events.
func NewDriver(backend Backend, prober Prober, events *EventLog, log *slog.Logger, cfg DriverConfig) *Driver {
	if cfg.WaitInFlight <= 0 {
		cfg.WaitInFlight = 2 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Millisecond
	}
	return &Driver{backend: backend, prober: prober, events: events, log: log, cfg: cfg, now: time.Now,
		held: map[int]func() error{}, stopped: make(chan struct{}),
		clusters: map[string]chan struct{}{"redis": make(chan struct{}, 1), "rabbitmq": make(chan struct{}, 1), "postgres": make(chan struct{}, 1)}}
}

// Close ends every network fault in force: it runs their undos now and
// makes the faults still waiting out their duration return. Faults applied
// after Close end at once. It is safe to call more than once.
func (d *Driver) Close() error {
	d.mu.Lock()
	select {
	case <-d.stopped:
	default:
		close(d.stopped)
	}
	undos := make([]func() error, 0, len(d.held))
	for _, u := range d.held {
		undos = append(undos, u)
	}
	d.mu.Unlock()
	var errs []error
	for _, u := range undos {
		errs = append(errs, u())
	}
	return errors.Join(errs...)
}

// network applies the network fault of s through the Network, holds it for
// the step's duration (or until ctx ends or Close) and undoes it.
func (d *Driver) network(ctx context.Context, s Step) error {
	forD := time.Duration(s.ForMS) * time.Millisecond
	delay := time.Duration(s.DelayMS) * time.Millisecond
	if !strings.Contains(s.Target, ".") || !isReplica(s.Target) || forD <= 0 {
		return fmt.Errorf("%s %q for %s: want a replica's path (worker-1.redis) and a positive duration", s.Action, s.Target, forD)
	}
	if (s.Action == ActionLatency || s.Action == ActionSlow) && delay <= 0 {
		return fmt.Errorf("%s %q: want a positive delay, got %s", s.Action, s.Target, delay)
	}
	inject, err := d.cfg.Network.Inject(ctx, string(s.Action), s.Target, delay)
	if err != nil {
		return fmt.Errorf("%s %s: %w", s.Action, s.Target, err)
	}
	var once sync.Once
	var undoErr error
	undo := func() error {
		once.Do(func() {
			if undoErr = inject(); undoErr != nil {
				undoErr = fmt.Errorf("undo %s %s: %w", s.Action, s.Target, undoErr)
			}
		})
		return undoErr
	}
	d.mu.Lock()
	id := d.nextID
	d.nextID++
	d.held[id] = undo
	d.mu.Unlock()
	t := time.NewTimer(forD)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-d.stopped:
	}
	err = undo()
	d.mu.Lock()
	delete(d.held, id)
	d.mu.Unlock()
	return err
}

// Do applies one fault of action to target now; see Apply.
func (d *Driver) Do(ctx context.Context, action Action, target string) (Event, error) {
	return d.Apply(ctx, Step{Action: action, Target: target})
}

// Apply applies the fault of s now (its AtMS is ignored) and returns its
// logged event.
//
// A network fault (latency, partition, reset_peer, slow) is injected into
// the path its target names (worker-1.redis) through the Network, held for
// the step's ForMS and then undone (also when ctx ends or the driver is
// closed); it aims at the replica whose path it hits, and its event's
// TookMS includes the time it was held. A latency or slow step without a
// DelayMS takes its kind's Delay.
//
// A fault with an aim first waits, at most WaitInFlight, until the aimed-at
// work is in flight, then is applied whether or not it saw any; the event's
// MidRequest says which. A kill or pause of a replica aims at the replica's
// own work; when the backend is a Freezer, the driver stops the replica as
// soon as a look shows work in flight and looks again: only work still in
// flight in the stopped process counts (Event.Frozen), since a request can
// be answered between a look and a kill. A fault of a service aims at the
// replicas its Kind names (Kind.Aim), by looks alone.
//
// A failover fault of an HA cluster (failover, migrate-slot on redis;
// kill-leader, partition-node on rabbitmq) first waits until the one before
// it on the same cluster has returned, its node back: overlapping, the second
// would hit a cluster already short of a node (a partition while a killed
// leader is still booting leaves one node of three, and no majority). Its
// event's Time is when it began, after that wait.
//
// A failed fault is logged too, with its error, and the error is returned.
// ErrUnknownAction and ErrUnsupported are returned unlogged.
func (d *Driver) Apply(ctx context.Context, s Step) (Event, error) {
	if s.Kind == "" {
		s.Kind = KindOf(s.Action, s.Target)
	}
	if s.Action.Network() && s.DelayMS == 0 && (s.Action == ActionLatency || s.Action == ActionSlow) {
		if k, ok := KindByName(s.Kind); ok {
			s.DelayMS = k.Delay.Milliseconds()
		}
	}
	e := Event{Kind: s.Kind, Action: s.Action, Target: s.Target, ForMS: s.ForMS, DelayMS: s.DelayMS}
	var err error
	if isReplica(s.Target) && (s.Action == ActionKill || s.Action == ActionPause) {
		if err = d.replicaFault(ctx, s, &e); errors.Is(err, ErrUnsupported) || (err != nil && e.Time.IsZero()) {
			return Event{}, err
		}
	} else {
		apply, aerr := d.action(s, &e)
		if aerr != nil {
			return Event{}, aerr
		}
		if token := d.clusters[s.Target]; token != nil && s.Action.Failover() {
			select {
			case token <- struct{}{}:
				defer func() { <-token }()
			case <-ctx.Done():
				return Event{}, fmt.Errorf("%s %s: waiting for the cluster's fault before it: %w", s.Action, s.Target, ctx.Err())
			}
		}
		if probe := d.aim(s); len(probe) > 0 {
			if err := d.waitInFlight(ctx, probe, &e); err != nil {
				return Event{}, err
			}
		}
		e.Time = d.now()
		e.PID, err = apply(ctx)
		e.TookMS = d.now().Sub(e.Time).Milliseconds()
	}
	if err != nil {
		e.Error = err.Error()
	}
	e, logErr := d.events.Append(e)
	d.log.Info("fault", "seq", e.Seq, "kind", e.Kind, "action", e.Action, "target", e.Target, "pid", e.PID,
		"mid_request", e.MidRequest, "frozen", e.Frozen, "in_flight", e.InFlight, "evidence", e.Evidence,
		"waited_ms", e.WaitedMS, "took_ms", e.TookMS, "err", e.Error)
	if d.cfg.OnEvent != nil {
		d.cfg.OnEvent(e)
	}
	return e, errors.Join(err, logErr)
}

// replicaFault kills or pauses one replica once its work is in flight. It
// sets e.Time when the fault was applied; an error with e.Time unset means
// nothing was done.
func (d *Driver) replicaFault(ctx context.Context, s Step, e *Event) error {
	fr, canFreeze := d.backend.(Freezer)
	pause := s.Action == ActionPause
	if pause && !canFreeze {
		return fmt.Errorf("%w: pause %s (the %T backend is no Freezer)", ErrUnsupported, s.Target, d.backend)
	}
	forD := time.Duration(s.ForMS) * time.Millisecond
	if pause && forD <= 0 {
		return fmt.Errorf("pause %s: want a positive duration, got %s", s.Target, forD)
	}
	start := d.now()
	deadline := start.Add(d.cfg.WaitInFlight)
	var (
		n        int
		evidence string
		frozen   int // the pid stopped, 0 if none
	)
	for {
		n, evidence = d.look(ctx, s.Target)
		if n > 0 && !canFreeze {
			break
		}
		if n > 0 {
			pid, err := fr.Freeze(ctx, s.Target)
			if err == nil {
				if n, evidence = d.look(ctx, s.Target); n > 0 {
					frozen = pid
					break
				}
				// answered between the look and the freeze: not in flight
				if err := fr.Thaw(pid); err != nil {
					return err
				}
			}
			n = 0
		}
		if !d.now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.cfg.Poll):
		}
	}
	e.Time = d.now()
	e.WaitedMS = e.Time.Sub(start).Milliseconds()
	mid := n > 0
	e.MidRequest, e.InFlight, e.Evidence, e.Frozen = &mid, n, evidence, frozen != 0
	var err error
	switch {
	case pause:
		e.PID = frozen
		if frozen == 0 {
			if e.PID, err = fr.Freeze(ctx, s.Target); err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(forD):
		}
		err = fr.Thaw(e.PID)
	default:
		e.PID, err = d.backend.KillReplica(ctx, s.Target)
		if err != nil && frozen != 0 {
			err = errors.Join(err, fr.Thaw(frozen))
		}
	}
	e.TookMS = d.now().Sub(e.Time).Milliseconds()
	return err
}

// look asks the prober about one replica; a failed look is no work.
func (d *Driver) look(ctx context.Context, replica string) (int, string) {
	n, evidence, err := d.prober.InFlight(ctx, replica)
	if err != nil {
		return 0, "probe failed: " + err.Error()
	}
	return n, evidence
}

// action returns the backend call that carries out s, or why there is none.
// A failover call records its cost in e.
func (d *Driver) action(s Step, e *Event) (func(context.Context) (int, error), error) {
	none := func(err error) (int, error) { return 0, err }
	unsupported := func(iface string) error {
		return fmt.Errorf("%w: %s %s (the %T backend is no %s)", ErrUnsupported, s.Action, s.Target, d.backend, iface)
	}
	forD := time.Duration(s.ForMS) * time.Millisecond
	switch s.Action {
	case ActionKill:
		k, ok := d.backend.(ServiceKiller)
		if !ok {
			return nil, unsupported("ServiceKiller")
		}
		return func(ctx context.Context) (int, error) { return none(k.KillService(ctx, s.Target)) }, nil
	case ActionRestart:
		return func(ctx context.Context) (int, error) { return none(d.backend.RestartService(ctx, s.Target)) }, nil
	case ActionFlush:
		return func(ctx context.Context) (int, error) {
			if s.Target != "redis" {
				return none(fmt.Errorf("flush %q: only redis can be flushed", s.Target))
			}
			return none(d.backend.FlushRedis(ctx))
		}, nil
	case ActionDeleteQueue:
		q, ok := d.backend.(QueueDeleter)
		if !ok {
			return nil, unsupported("QueueDeleter")
		}
		return func(ctx context.Context) (int, error) {
			_, err := q.DeleteQueue(ctx, ChargeQueue)
			return none(err)
		}, nil
	case ActionOutage:
		o, ok := d.backend.(Outager)
		if !ok {
			return nil, unsupported("Outager")
		}
		return func(ctx context.Context) (int, error) {
			if s.Target != "psp" || forD <= 0 {
				return none(fmt.Errorf("outage of %q for %s: only the psp, for a positive duration", s.Target, forD))
			}
			return none(o.PSPOutage(ctx, forD))
		}, nil
	case ActionStall:
		st, ok := d.backend.(Staller)
		if !ok {
			return nil, unsupported("Staller")
		}
		return func(ctx context.Context) (int, error) {
			if forD <= 0 {
				return none(fmt.Errorf("stall %q: want a positive duration, got %s", s.Target, forD))
			}
			return st.StallService(ctx, s.Target, forD)
		}, nil
	case ActionReject:
		rj, ok := d.backend.(Rejecter)
		if !ok {
			return nil, unsupported("Rejecter")
		}
		share := 1.0
		if k, ok := KindByName(s.Kind); ok && k.Share > 0 {
			share = k.Share
		}
		return func(ctx context.Context) (int, error) {
			if s.Target != "psp" || forD <= 0 {
				return none(fmt.Errorf("reject by %q for %s: only the psp, for a positive duration", s.Target, forD))
			}
			return none(rj.PSPReject(ctx, share, forD))
		}, nil
	case ActionFailover, ActionFailoverLagged, ActionMigrateSlot, ActionKillLeader, ActionPartitionNode, ActionSwitchover:
		var run func(ctx context.Context) (Cost, error)
		if s.Target == "postgres" {
			pf, ok := d.backend.(PostgresFailoverer)
			if !ok {
				return nil, unsupported("PostgresFailoverer")
			}
			run = func(ctx context.Context) (Cost, error) { return d.failoverPostgres(ctx, pf, s, forD) }
		} else {
			f, ok := d.backend.(Failoverer)
			if !ok {
				return nil, unsupported("Failoverer")
			}
			run = func(ctx context.Context) (Cost, error) { return d.failover(ctx, f, s, forD) }
		}
		return func(ctx context.Context) (int, error) {
			c, err := run(ctx)
			if c != (Cost{}) {
				e.Cost = &c
			}
			return none(err)
		}, nil
	case ActionPause:
		return nil, fmt.Errorf("pause %q: only a replica can be paused", s.Target)
	case ActionLatency, ActionPartition, ActionResetPeer, ActionSlow:
		if d.cfg.Network == nil {
			return nil, fmt.Errorf("%w: %s %s (no network: the runtime has no Toxiproxy, TOXIPROXY_URL unset)", ErrUnsupported, s.Action, s.Target)
		}
		return func(ctx context.Context) (int, error) { return none(d.network(ctx, s)) }, nil
	}
	return nil, fmt.Errorf("%w %q (want kill, restart, flush, pause, stall, reject, delete-queue, outage, latency, partition, reset_peer, slow, failover, migrate-slot, kill-leader or partition-node)", ErrUnknownAction, s.Action)
}

// failover carries out a failover action on its service: failover and
// migrate-slot on redis, kill-leader and partition-node on rabbitmq (the
// charge queue's leader, for forD; the kind's For when the step has none).
func (d *Driver) failover(ctx context.Context, f Failoverer, s Step, forD time.Duration) (Cost, error) {
	want := map[Action]string{ActionFailover: "redis", ActionMigrateSlot: "redis", ActionKillLeader: "rabbitmq", ActionPartitionNode: "rabbitmq"}[s.Action]
	if s.Target != want {
		return Cost{}, fmt.Errorf("%s %q: only %s", s.Action, s.Target, want)
	}
	if k, ok := KindByName(s.Kind); ok && forD <= 0 {
		forD = k.For
	}
	switch s.Action {
	case ActionFailover:
		return f.FailoverRedis(ctx)
	case ActionMigrateSlot:
		return f.MigrateSlot(ctx)
	case ActionKillLeader:
		return f.KillQueueLeader(ctx, ChargeQueue, forD)
	default:
		return f.PartitionQueueLeader(ctx, ChargeQueue, forD)
	}
}

// failoverPostgres carries out a failover action on Postgres under
// Patroni: failover, failover-lagged (the leader's replication held for
// the step's delay, the kind's when it has none, first), switchover, or
// partition-node of the leader for forD (the kind's For when the step has
// none).
func (d *Driver) failoverPostgres(ctx context.Context, f PostgresFailoverer, s Step, forD time.Duration) (Cost, error) {
	lag := time.Duration(s.DelayMS) * time.Millisecond
	if k, ok := KindByName(s.Kind); ok {
		if forD <= 0 {
			forD = k.For
		}
		if lag <= 0 {
			lag = k.Delay
		}
	}
	switch s.Action {
	case ActionFailover:
		return f.FailoverPostgres(ctx, 0)
	case ActionFailoverLagged:
		if lag <= 0 {
			return Cost{}, fmt.Errorf("failover-lagged postgres: want a positive delay, got %s", lag)
		}
		return f.FailoverPostgres(ctx, lag)
	case ActionSwitchover:
		return f.SwitchoverPostgres(ctx)
	case ActionPartitionNode:
		if forD <= 0 {
			return Cost{}, fmt.Errorf("partition-node postgres: want a positive duration, got %s", forD)
		}
		return f.PartitionPostgres(ctx, forD)
	}
	return Cost{}, fmt.Errorf("%s postgres: only failover, failover-lagged, switchover and partition-node", s.Action)
}

// aim returns the replicas whose work in flight the fault of s waits for:
// a replica fault's target (a network fault's: the replica whose path it
// hits); for a service fault, the replicas its kind
// aims at; none for a fault of no known kind on a service (it is applied
// at once, as before kinds had aims).
func (d *Driver) aim(s Step) []string {
	if isReplica(s.Target) {
		replica, _, _ := strings.Cut(s.Target, ".")
		return []string{replica}
	}
	k, ok := KindByName(s.Kind)
	if !ok {
		return nil
	}
	switch k.Aim {
	case AimRequest:
		return d.cfg.APIs
	case AimCharge:
		return d.cfg.Workers
	case AimAny:
		return append(append([]string(nil), d.cfg.APIs...), d.cfg.Workers...)
	}
	return nil
}

// waitInFlight polls the replicas until one has work in flight or
// WaitInFlight has passed, and records what it saw in e.
func (d *Driver) waitInFlight(ctx context.Context, replicas []string, e *Event) error {
	start := d.now()
	deadline := start.Add(d.cfg.WaitInFlight)
	var (
		n        int
		evidence []string
	)
	for {
		evidence = evidence[:0]
		for _, r := range replicas {
			m, ev, err := d.prober.InFlight(ctx, r)
			if err != nil {
				m, ev = 0, "probe failed: "+err.Error()
			}
			if len(replicas) > 1 {
				ev = r + ": " + ev
			}
			if m > 0 {
				n, evidence = m, []string{ev}
				if len(replicas) > 1 {
					e.Hit = r
				}
				break
			}
			evidence = append(evidence, ev)
		}
		if n > 0 || !d.now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.cfg.Poll):
		}
	}
	mid := n > 0
	e.WaitedMS = d.now().Sub(start).Milliseconds()
	e.MidRequest, e.InFlight, e.Evidence = &mid, n, strings.Join(evidence, "; ")
	return nil
}

// isReplica reports whether target names a replica (api-1, worker-2).
func isReplica(target string) bool {
	return strings.HasPrefix(target, "api-") || strings.HasPrefix(target, "worker-")
}
