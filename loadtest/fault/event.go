package fault

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Event is one fault as it happened: one line of the fault log.
type Event struct {
	Seq    int       `json:"seq"`            // 1, 2, ... in the order the faults were applied
	Time   time.Time `json:"time"`           // when the fault was applied (after any wait)
	Kind   string    `json:"kind,omitempty"` // the Kinds entry (KindOf for logs without one)
	Action Action    `json:"action"`
	Target string    `json:"target"`
	ForMS  int64     `json:"for_ms,omitempty"` // a pause's, an outage's or a network fault's length
	// DelayMS is a latency or slow network fault's delay.
	DelayMS int64 `json:"delay_ms,omitempty"`
	// PID is the process a kill or a pause hit (0 when the runtime has no
	// pids, and for services).
	PID int `json:"pid,omitempty"`
	// MidRequest is set for faults with an aim: whether the aimed-at work
	// was in flight when the fault was applied; InFlight and Evidence say
	// what was seen, Hit which replica had it (for a fault of a service).
	MidRequest *bool  `json:"mid_request,omitempty"`
	InFlight   int    `json:"in_flight,omitempty"`
	Evidence   string `json:"evidence,omitempty"`
	Hit        string `json:"hit,omitempty"`
	// Frozen: the replica was stopped (SIGSTOP) when InFlight was counted,
	// so the work seen could not finish before the fault hit it.
	Frozen bool `json:"frozen,omitempty"`
	// WaitedMS is how long the driver waited for work in flight; TookMS how
	// long the fault itself took (a restart: until the service answered).
	WaitedMS int64  `json:"waited_ms"`
	TookMS   int64  `json:"took_ms"`
	Error    string `json:"error,omitempty"`
	// Cost is a failover fault's own account (Failoverer).
	Cost *Cost `json:"cost,omitempty"`
}

// EventLog appends events to a JSON-lines file and keeps them in memory. It
// is safe for concurrent use.
type EventLog struct {
	mu     sync.Mutex
	w      io.Writer
	events []Event
}

// NewEventLog returns a log that appends to w.
func NewEventLog(w io.Writer) *EventLog { return &EventLog{w: w} }

// Append numbers e, writes it as one line and returns it with its number.
func (l *EventLog) Append(e Event) (Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Seq = len(l.events) + 1
	l.events = append(l.events, e)
	b, err := json.Marshal(e)
	if err != nil {
		return e, err
	}
	if _, err := l.w.Write(append(b, '\n')); err != nil {
		return e, fmt.Errorf("write fault log: %w", err)
	}
	return e, nil
}

// Events returns a copy of the events so far, in order.
func (l *EventLog) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// ReadEvents reads a fault log written by EventLog. A missing file is an
// empty log.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read fault log: %w", err)
	}
	defer f.Close()
	var events []Event
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("read fault log %s line %d: %w", path, n, err)
		}
		events = append(events, e)
	}
	return events, sc.Err()
}

// String describes the event on one line, for people.
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fault %d: %s %s", e.Seq, e.Action, e.Target)
	if e.ForMS > 0 {
		fmt.Fprintf(&b, " for %s", time.Duration(e.ForMS)*time.Millisecond)
	}
	if e.DelayMS > 0 {
		fmt.Fprintf(&b, " (delay %s)", time.Duration(e.DelayMS)*time.Millisecond)
	}
	if e.PID != 0 {
		fmt.Fprintf(&b, " (pid %d)", e.PID)
	}
	switch {
	case e.MidRequest != nil && *e.MidRequest && e.Hit != "":
		fmt.Fprintf(&b, ", mid-request on %s: %s, after waiting %dms, took %dms", e.Hit, e.Evidence, e.WaitedMS, e.TookMS)
	case e.MidRequest != nil && *e.MidRequest && e.Frozen:
		fmt.Fprintf(&b, ", mid-request (seen frozen): %s, after waiting %dms", e.Evidence, e.WaitedMS)
	case e.MidRequest != nil && *e.MidRequest:
		fmt.Fprintf(&b, ", mid-request: %s, after waiting %dms", e.Evidence, e.WaitedMS)
	case e.MidRequest != nil:
		fmt.Fprintf(&b, ", NOT mid-request (waited %dms): %s", e.WaitedMS, e.Evidence)
	default:
		fmt.Fprintf(&b, ", took %dms", e.TookMS)
	}
	if c := e.Cost; c != nil {
		fmt.Fprintf(&b, "; %s", c.Node)
		if c.RefusedMS >= 0 {
			fmt.Fprintf(&b, ", writes refused %dms", c.RefusedMS)
		}
		if c.PromotedMS != 0 {
			fmt.Fprintf(&b, ", new primary %dms", c.PromotedMS)
		}
		if c.DemotedMS != 0 {
			fmt.Fprintf(&b, ", demoted %dms", c.DemotedMS)
		}
		if c.Detail != "" {
			fmt.Fprintf(&b, ", %s", c.Detail)
		}
	}
	if e.Error != "" {
		fmt.Fprintf(&b, "; FAILED: %s", e.Error)
	}
	return b.String()
}

// Landed reports whether the fault was applied without error and, if it
// had an aim, while the aimed-at work was in flight.
func (e Event) Landed() bool {
	return e.Error == "" && (e.MidRequest == nil || *e.MidRequest)
}
