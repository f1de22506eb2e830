package amqpconfirm

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestGateStopsPublishingBeforeRecovery pins the order a gate keeps: a
// recovery starts only after the publishes that are sending have sent; it
// ends their generation at once; nothing is sent until every recovery in
// progress has ended with the channel open; then a new generation starts.
func TestGateStopsPublishingBeforeRecovery(t *testing.T) {
	t.Parallel()
	r := NewRecovery(nil)
	ch := &amqp.Channel{} // a zero Channel reports itself open
	g := r.Gate(ch)
	if got := r.Gate(ch); got != g {
		t.Fatal("a second Gate for the same channel is another gate")
	}
	first := g.gen

	sending, sent := make(chan struct{}), make(chan struct{})
	go g.Do(func(*amqp.Channel) error { // a publish that is sending
		close(sending)
		<-sent
		return nil
	})
	<-sending
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
	close(sent)
	<-stopped
	select {
	case <-first.closed:
	default:
		t.Fatal("the generation of the publish did not end when recovery started")
	}
	if ran, _ := g.Do(func(*amqp.Channel) error { return nil }); ran || g.Ready() {
		t.Fatal("the channel could be used during recovery")
	}
	if err := g.Publish(context.Background(), "", "q", false, amqp.Publishing{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish during recovery: got %v, want ErrClosed", err)
	}

	g.stop() // a second recovery overlaps (connection and channel)
	g.resume()
	if g.Ready() {
		t.Fatal("the channel could be used while a recovery is still in progress")
	}
	g.resume()
	if !g.Ready() {
		t.Fatal("no generation after the recoveries ended")
	}
	if g.gen == first {
		t.Fatal("the new generation is the old one")
	}

	g.Close()
	if g.Ready() {
		t.Fatal("the channel could be used after Close")
	}
	if _, ok := r.gates[ch]; ok {
		t.Fatal("the recovery still knows the channel after Close")
	}
	g.stop()
	g.resume()
	if g.Ready() {
		t.Fatal("a recovery that ends after Close opened a generation")
	}
}

// TestRecoveryStopsTheGatesItAffects: a connection close stops every gate,
// a channel close only that channel's.
func TestRecoveryStopsTheGatesItAffects(t *testing.T) {
	t.Parallel()
	seen := make(chan [2]bool, 1)
	var a, b *Gate
	r := NewRecovery(recoveryFunc(func() { seen <- [2]bool{a.Ready(), b.Ready()} }))
	cha, chb := &amqp.Channel{}, &amqp.Channel{}
	a, b = r.Gate(cha), r.Gate(chb)

	tests := []struct {
		name  string
		close func()
		want  [2]bool // a and b ready while the wrapped recovery runs
	}{
		{"connection", func() { r.OnConnectionClose(nil, nil) }, [2]bool{false, false}},
		{"channel a", func() { r.OnChannelClose(cha, nil) }, [2]bool{false, true}},
		{"another channel", func() { r.OnChannelClose(&amqp.Channel{}, nil) }, [2]bool{true, true}},
	}
	for _, tt := range tests {
		tt.close()
		if got := <-seen; got != tt.want {
			t.Errorf("%s closed: ready during its recovery got %v, want %v", tt.name, got, tt.want)
		}
		if !a.Ready() || !b.Ready() {
			t.Errorf("%s closed: a gate is not ready after its recovery", tt.name)
		}
	}
}

// recoveryFunc is a wrapped recovery that only calls itself.
type recoveryFunc func()

func (f recoveryFunc) OnConnectionClose(*amqp.Connection, *amqp.Error) { f() }
func (f recoveryFunc) OnChannelClose(*amqp.Channel, *amqp.Error)       { f() }
