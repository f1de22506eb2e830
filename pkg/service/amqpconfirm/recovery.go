package amqpconfirm

import (
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Recovery is an amqp.ConnectionRecovery for one connection: the one it
// wraps (Next), run with publishing stopped on the gated channels it
// affects. A connection close stops every gate; a channel close stops that
// channel's gate, if it has one; the closes of other channels pass
// through untouched. Set it (or a ConnectionRecovery that delegates to it)
// as the connection's Config.Recovery.ConnectionRecovery.
//
// Recovery is safe for concurrent use; the library may report a
// connection close and its channels' closes concurrently.
type Recovery struct {
	next amqp.ConnectionRecovery

	mu    sync.Mutex
	gates map[*amqp.Channel]*Gate
}

// NewRecovery returns a Recovery that delegates the reopening to next;
// nil means amqp.DefaultConnectionRecovery.
func NewRecovery(next amqp.ConnectionRecovery) *Recovery {
	if next == nil {
		next = &amqp.DefaultConnectionRecovery{}
	}
	return &Recovery{next: next, gates: make(map[*amqp.Channel]*Gate)}
}

// Gate returns the gate of ch, a channel of r's connection that the
// caller has just put in confirm mode (ch.Confirm); its first generation
// starts now. Calling it again for the same channel returns the same gate.
func (r *Recovery) Gate(ch *amqp.Channel) *Gate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g, ok := r.gates[ch]; ok {
		return g
	}
	g := &Gate{r: r, ch: ch, gen: newGeneration()}
	r.gates[ch] = g
	return g
}

// OnConnectionClose implements amqp.ConnectionRecovery: it stops every
// gate, runs the wrapped recovery (which reopens the connection and its
// channels), then resumes them.
func (r *Recovery) OnConnectionClose(conn *amqp.Connection, err *amqp.Error) {
	r.mu.Lock()
	gates := make([]*Gate, 0, len(r.gates))
	for _, g := range r.gates {
		gates = append(gates, g)
	}
	r.mu.Unlock()
	for _, g := range gates {
		g.stop()
	}
	defer func() {
		for _, g := range gates {
			g.resume()
		}
	}()
	r.next.OnConnectionClose(conn, err)
}

// OnChannelClose implements amqp.ConnectionRecovery: it stops ch's gate,
// if it has one, runs the wrapped recovery (which reopens ch), then
// resumes it.
func (r *Recovery) OnChannelClose(ch *amqp.Channel, err *amqp.Error) {
	r.mu.Lock()
	g := r.gates[ch]
	r.mu.Unlock()
	if g == nil {
		r.next.OnChannelClose(ch, err)
		return
	}
	g.stop()
	defer g.resume()
	r.next.OnChannelClose(ch, err)
}

// forget drops ch's gate (Gate.Close).
func (r *Recovery) forget(ch *amqp.Channel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.gates, ch)
}
