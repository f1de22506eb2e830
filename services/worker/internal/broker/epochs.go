package broker

import (
	"log/slog"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Epochs counts the channel sessions lost to connection and channel closes.
// It is a ConnectionRecovery with one step added: before handing a close to
// the recovery it wraps (the publishing gates', which wraps amqp091-go's
// DefaultConnectionRecovery, which reconnects), it bumps the epoch of the
// connection, or of the one channel that closed.
//
// Why: a delivery tag is only meaningful on the channel session that issued
// it. After the library reopens a channel, tags start at 1 again, so acking a
// tag read before the loss would ack whatever the new session numbered the
// same, possibly a message nobody has processed yet. Because the bump happens
// before the library reconnects, every delivery of a new session is read
// after the bump; Guard.Do runs an ack only if no bump happened since the
// delivery was read, under the same lock the bump takes. The broker requeues
// every unacked delivery of a lost session by itself, so skipping is right.
//
// Epochs is safe for concurrent use.
type Epochs struct {
	log  *slog.Logger
	next amqp.ConnectionRecovery
	conn atomic.Pointer[amqp.Connection]

	mu       sync.Mutex
	connGen  uint64
	chanGens map[*amqp.Channel]uint64
}

// NewEpochs returns Epochs that log to log and then delegate to next.
func NewEpochs(log *slog.Logger, next amqp.ConnectionRecovery) *Epochs {
	return &Epochs{log: log, next: next, chanGens: make(map[*amqp.Channel]uint64)}
}

// OnConnectionClose implements amqp.ConnectionRecovery: every channel
// session of conn is gone.
func (e *Epochs) OnConnectionClose(conn *amqp.Connection, err *amqp.Error) {
	e.mu.Lock()
	e.connGen++
	e.mu.Unlock()
	e.log.Warn("amqp connection lost; recovering", "err", err)
	e.next.OnConnectionClose(conn, err)
	e.log.Info("amqp connection recovery ended", "open", !conn.IsClosed())
}

// OnChannelClose implements amqp.ConnectionRecovery: the session of ch is
// gone. When the whole connection closed, the library also reports each of
// its channels here; the connection's epoch already covers those, and a late
// report must not bump a channel that recovery has since reopened, so the
// bump happens only while the connection is up and ch is still closed.
func (e *Epochs) OnChannelClose(ch *amqp.Channel, err *amqp.Error) {
	conn := e.conn.Load()
	if conn != nil && !conn.IsClosed() && ch.IsClosed() {
		e.mu.Lock()
		e.chanGens[ch]++
		e.mu.Unlock()
		e.log.Warn("amqp channel closed by the broker; recovering", "err", err)
	}
	e.next.OnChannelClose(ch, err)
}

// attach tells e which connection it serves (set once, right after dialling).
func (e *Epochs) attach(conn *amqp.Connection) { e.conn.Store(conn) }

// Guard returns the guard of channel ch.
func (e *Epochs) Guard(ch *amqp.Channel) *Guard { return &Guard{e: e, ch: ch} }

// Guard runs settlements on one channel only while its session is the one
// that issued the delivery.
type Guard struct {
	e  *Epochs
	ch *amqp.Channel
}

// Epoch returns the channel's current epoch; it changes whenever the
// channel's session (or its connection) was lost.
func (g *Guard) Epoch() uint64 {
	g.e.mu.Lock()
	defer g.e.mu.Unlock()
	return g.epoch()
}

func (g *Guard) epoch() uint64 { return g.e.connGen + g.e.chanGens[g.ch] }

// Do runs f if the channel is still in epoch, holding the lock that recovery
// must take first, so that f cannot reach a session opened after the check.
// It reports whether f ran. f must not block for long (an ack or a nack).
func (g *Guard) Do(epoch uint64, f func() error) (ran bool, err error) {
	g.e.mu.Lock()
	defer g.e.mu.Unlock()
	if g.epoch() != epoch {
		return false, nil
	}
	return true, f()
}
