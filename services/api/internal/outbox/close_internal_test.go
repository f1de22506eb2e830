package outbox

import (
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestCloseDoesNotWaitForANotificationChannelLeftOpen: amqp091-go can
// leave a channel's state notification channel open after the connection
// is closed during that channel's recovery (seen once: Close waited for
// its watcher for ten minutes). Close must return anyway, and a state
// change the library sends afterwards must not block it.
func TestCloseDoesNotWaitForANotificationChannelLeftOpen(t *testing.T) {
	p := NewPublisher(PublisherConfig{}, slog.New(slog.DiscardHandler))
	states := make(chan *amqp.StateChanged) // never closed, unbuffered
	p.wg.Add(1)
	go p.watch("channel", states)

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits for the watcher of a notification channel the library left open")
	}
	select {
	case states <- &amqp.StateChanged{From: amqp.StateOpen, To: amqp.StateClosed}:
	case <-time.After(10 * time.Second):
		t.Fatal("a state change sent after Close blocks the library")
	}
}
