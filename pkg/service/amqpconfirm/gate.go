package amqpconfirm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Errors of Gate.Publish; match them with errors.Is.
var (
	// ErrClosed: the channel is not open in confirm mode (being recovered,
	// or closed for good). Nothing was sent.
	ErrClosed = errors.New("amqpconfirm: channel not open in confirm mode")
	// ErrNacked: the broker nacked the message (a queue refused it).
	ErrNacked = errors.New("amqpconfirm: nacked by the broker")
	// ErrUnconfirmed: the channel closed before the message's confirm
	// came; the message may or may not have reached a queue.
	ErrUnconfirmed = errors.New("amqpconfirm: channel closed before the confirm")
)

// Gate publishes on one channel in confirm mode, and only while that
// channel is not being recovered (see the package documentation). Get one
// from Recovery.Gate. Its methods are safe for concurrent use; a
// basic.return is not matched to its publish here (the caller's
// NotifyReturn does that).
type Gate struct {
	r *Recovery

	mu         sync.RWMutex
	ch         *amqp.Channel // nil after Close
	gen        *generation   // nil while the channel is not open in confirm mode
	recovering int           // recoveries in progress (connection and channel)
}

// generation is one period in which the channel is open in confirm mode;
// closed is closed when it ends.
type generation struct{ closed chan struct{} }

func newGeneration() *generation { return &generation{closed: make(chan struct{})} }

// Publish sends msg on the channel, when it is open in confirm mode, and
// waits for the broker's confirm of msg (amqp091-go's
// DeferredConfirmation) or for the end of the channel session, whichever
// comes first; a confirm that came first stands. It returns nil only on a
// positive confirm of msg. Otherwise the error wraps ErrClosed (nothing
// sent), ErrNacked, ErrUnconfirmed, ctx's error (the wait was cut short)
// or the library's send error; after all but ErrClosed the message may
// have reached a queue.
func (g *Gate) Publish(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) error {
	g.mu.RLock()
	ch, gen := g.ch, g.gen
	if gen == nil || ch == nil {
		g.mu.RUnlock()
		return ErrClosed
	}
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, mandatory, false, msg)
	g.mu.RUnlock()
	switch {
	case errors.Is(err, amqp.ErrClosed): // nothing sent: the close is not reported yet
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case err != nil:
		return fmt.Errorf("send: %w", err)
	case dc == nil: // not in confirm mode: cannot happen in an open generation
		return fmt.Errorf("%w: the channel is not in confirm mode", ErrUnconfirmed)
	}
	select {
	case <-dc.Done():
	case <-gen.closed:
	case <-ctx.Done():
	}
	select {
	case <-dc.Done(): // a confirm that came first stands
		if !dc.Acked() {
			return ErrNacked
		}
		return nil
	default:
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("wait for the confirm: %w", err)
	}
	return ErrUnconfirmed
}

// Do runs f with the channel while it is open in confirm mode, and keeps
// the library from reopening it until f returns; it reports whether f ran
// (false: the channel is being recovered or closed). f must not wait for
// the channel's recovery.
func (g *Gate) Do(f func(*amqp.Channel) error) (ran bool, err error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.gen == nil || g.ch == nil {
		return false, nil
	}
	return true, f(g.ch)
}

// Ready reports whether the channel is open in confirm mode (Publish can
// send).
func (g *Gate) Ready() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.gen != nil
}

// Close ends the gate for good: publishes waiting for a confirm fail with
// ErrUnconfirmed, later ones with ErrClosed, and the recovery forgets the
// channel. It does not close the channel.
func (g *Gate) Close() {
	g.mu.Lock()
	ch := g.ch
	g.end()
	g.ch = nil
	g.mu.Unlock()
	if ch != nil {
		g.r.forget(ch)
	}
}

// stop ends the current generation and counts a recovery in progress; it
// waits for publishes that are sending.
func (g *Gate) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recovering++
	g.end()
}

// resume counts a recovery done; when none is left and the channel is
// open again (the library reopened it in confirm mode, or it failed and
// left it closed), a new generation starts.
func (g *Gate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recovering--
	if g.recovering == 0 && g.gen == nil && g.ch != nil && !g.ch.IsClosed() {
		g.gen = newGeneration()
	}
}

// end closes the current generation; the caller holds the write lock.
func (g *Gate) end() {
	if g.gen != nil {
		close(g.gen.closed)
		g.gen = nil
	}
}
