package outbox

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestGateStopsPublishingBeforeRecovery pins the order the gate keeps: a
// recovery starts only after the publishes that are sending have sent; it
// ends their generation at once; no publish starts until every recovery
// in progress has ended with the channel open; then a new generation
// starts.
func TestGateStopsPublishingBeforeRecovery(t *testing.T) {
	t.Parallel()
	g := &gate{}
	g.open(&amqp.Channel{}) // a zero Channel reports itself open

	_, first, ok := g.current() // a publish that is sending
	if !ok {
		t.Fatal("no generation after open")
	}
	stopped := make(chan struct{})
	go func() {
		g.stop() // the library's recovery starts
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("recovery started while a publish was sending")
	case <-time.After(50 * time.Millisecond):
	}
	g.mu.RUnlock() // the publish has sent
	<-stopped
	select {
	case <-first.closed:
	default:
		t.Fatal("the generation of the publish did not end when recovery started")
	}
	if _, _, ok := g.current(); ok {
		t.Fatal("a publish could start during recovery")
	}

	g.stop() // a second recovery overlaps (connection and channel)
	g.resume()
	if _, _, ok := g.current(); ok {
		t.Fatal("a publish could start while a recovery is still in progress")
	}
	g.resume()
	_, second, ok := g.current()
	if !ok {
		t.Fatal("no generation after the recoveries ended")
	}
	g.mu.RUnlock()
	if second == first {
		t.Fatal("the new generation is the old one")
	}

	g.shut()
	if _, _, ok := g.current(); ok {
		t.Fatal("a publish could start after Close")
	}
	g.stop()
	g.resume()
	if g.usable() {
		t.Fatal("a recovery that ends after Close opened a generation")
	}
}
