package outbox

import (
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// gate orders publishes against the recovery of the publishing channel, so
// that a message goes out only on a channel in confirm mode and its confirm
// settles exactly that message.
//
// amqp091-go's recovery reopens the same *amqp.Channel: it resets the
// confirm counter, opens the channel on the broker, then puts it back in
// confirm mode. A message sent between the open and confirm.select-ok
// gets no sequence number on the broker but one in the client, and from
// then on each confirm settles the message before its own: a nacked
// message could be reported published. The library's state notifications
// come too late to keep publishes out of that window (they are delivered
// asynchronously), so the gate does it synchronously: every reopen happens
// inside the Publisher's amqp.ConnectionRecovery (recovery, which runs the
// library's own), and that marks the current generation closed, under the
// write lock, before it lets the library reopen anything. A publish sends
// under the read lock, and only on an open generation.
//
// A generation is one period in which the channel is open in confirm
// mode. When it ends, every publish of it still waiting for its confirm
// fails at once (the library nacks their deferred confirms too, when it
// resets the channel); the relay publishes them again. A confirm that
// arrived before the end stands: the broker sends a channel's confirms
// before its channel.close, and the library dispatches them in that order.
type gate struct {
	mu         sync.RWMutex
	ch         *amqp.Channel // the publishing channel, once connected
	gen        *generation   // nil while the channel is not open in confirm mode
	recovering int           // recoveries in progress (connection and channel)
}

// generation is one open period of the publishing channel; closed is
// closed when it ends.
type generation struct{ closed chan struct{} }

// open starts the first generation, on ch just put in confirm mode.
func (g *gate) open(ch *amqp.Channel) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ch = ch
	g.gen = &generation{closed: make(chan struct{})}
}

// current returns the publishing channel and its open generation, under
// the read lock, which the caller releases with g.mu.RUnlock after its
// send; ok is false (and the lock released) when there is none.
func (g *gate) current() (ch *amqp.Channel, gen *generation, ok bool) {
	g.mu.RLock()
	if g.gen == nil || g.ch == nil {
		g.mu.RUnlock()
		return nil, nil, false
	}
	return g.ch, g.gen, true
}

// usable reports whether a generation is open.
func (g *gate) usable() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.gen != nil
}

// stop ends the current generation and counts a recovery in progress;
// it waits for publishes that are sending.
func (g *gate) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recovering++
	g.end()
}

// resume counts a recovery done; when none is left and the channel is
// open again (the library reopened it in confirm mode, or failed and left
// it closed), a new generation starts.
func (g *gate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recovering--
	if g.recovering == 0 && g.gen == nil && g.ch != nil && !g.ch.IsClosed() {
		g.gen = &generation{closed: make(chan struct{})}
	}
}

// shut ends the current generation for good (Close).
func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.end()
	g.ch = nil
}

// end closes the current generation; the caller holds the write lock.
func (g *gate) end() {
	if g.gen != nil {
		close(g.gen.closed)
		g.gen = nil
	}
}

// recovery is the Publisher's amqp.ConnectionRecovery: the library's own
// (amqp.DefaultConnectionRecovery, which reopens the connection or the
// channel and puts it back in confirm mode), with publishing stopped
// while it runs. Channels other than the publishing one (the topology
// declarations' own) recover without touching publishing.
type recovery struct {
	amqp.DefaultConnectionRecovery
	gate *gate
}

// OnConnectionClose recovers the connection and its channels.
func (r *recovery) OnConnectionClose(conn *amqp.Connection, err *amqp.Error) {
	r.gate.stop()
	defer r.gate.resume()
	r.DefaultConnectionRecovery.OnConnectionClose(conn, err)
}

// OnChannelClose recovers ch.
func (r *recovery) OnChannelClose(ch *amqp.Channel, err *amqp.Error) {
	r.gate.mu.RLock()
	publishing := ch == r.gate.ch
	r.gate.mu.RUnlock()
	if !publishing {
		r.DefaultConnectionRecovery.OnChannelClose(ch, err)
		return
	}
	r.gate.stop()
	defer r.gate.resume()
	r.DefaultConnectionRecovery.OnChannelClose(ch, err)
}
