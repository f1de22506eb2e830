package fault

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ErrUnknownAction is returned by Driver.Do for an action it does not know.
var ErrUnknownAction = errors.New("unknown fault action")

// DriverConfig tunes the wait for work in flight before a kill.
type DriverConfig struct {
	WaitInFlight time.Duration // give up waiting after this long and kill anyway (default 2s)
	Poll         time.Duration // how often to look (default 5ms)
	// OnEvent, if set, is called with every logged event (e.g. to show it
	// to a person), after it was written to the log.
	OnEvent func(Event)
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
}

// NewDriver returns a driver over backend and prober that records to events.
func NewDriver(backend Backend, prober Prober, events *EventLog, log *slog.Logger, cfg DriverConfig) *Driver {
	if cfg.WaitInFlight <= 0 {
		cfg.WaitInFlight = 2 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Millisecond
	}
	return &Driver{backend: backend, prober: prober, events: events, log: log, cfg: cfg, now: time.Now}
}

// Do applies one fault now and returns its logged event. A kill first waits,
// at most WaitInFlight, until the prober sees work in flight on the replica,
// then kills it whether or not it saw any; the event says which. A failed
// fault is logged too, with its error, and the error is returned.
func (d *Driver) Do(ctx context.Context, action Action, target string) (Event, error) {
	e := Event{Action: action, Target: target}
	var err error
	switch action {
	case ActionKill:
		err = d.kill(ctx, &e)
	case ActionRestart:
		e.Time = d.now()
		err = d.backend.RestartService(ctx, target)
		e.TookMS = d.now().Sub(e.Time).Milliseconds()
	case ActionFlush:
		e.Time = d.now()
		if target != "redis" {
			err = fmt.Errorf("flush %q: only redis can be flushed", target)
			break
		}
		err = d.backend.FlushRedis(ctx)
		e.TookMS = d.now().Sub(e.Time).Milliseconds()
	default:
		return Event{}, fmt.Errorf("%w %q (want kill, restart or flush)", ErrUnknownAction, action)
	}
	if err != nil {
		e.Error = err.Error()
	}
	e, logErr := d.events.Append(e)
	d.log.Info("fault", "seq", e.Seq, "action", e.Action, "target", e.Target, "pid", e.PID,
		"mid_request", e.MidRequest, "in_flight", e.InFlight, "evidence", e.Evidence,
		"waited_ms", e.WaitedMS, "took_ms", e.TookMS, "err", e.Error)
	if d.cfg.OnEvent != nil {
		d.cfg.OnEvent(e)
	}
	return e, errors.Join(err, logErr)
}

// kill waits for work in flight on the replica, then kills it.
func (d *Driver) kill(ctx context.Context, e *Event) error {
	start := d.now()
	deadline := start.Add(d.cfg.WaitInFlight)
	var (
		n        int
		evidence string
	)
	for {
		var err error
		n, evidence, err = d.prober.InFlight(ctx, e.Target)
		if err != nil {
			n, evidence = 0, "probe failed: "+err.Error()
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
	e.Time = d.now()
	e.WaitedMS = e.Time.Sub(start).Milliseconds()
	mid := n > 0
	e.MidRequest, e.InFlight, e.Evidence = &mid, n, evidence
	pid, err := d.backend.KillReplica(ctx, e.Target)
	e.PID = pid
	e.TookMS = d.now().Sub(e.Time).Milliseconds()
	return err
}
