package outbox

import (
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// returns matches the broker's basic.return of an unroutable mandatory
// publish to the publish waiting for its confirm.
//
// RabbitMQ sends the basic.return of a message before the basic.ack that
// confirms it (an unroutable message is still confirmed positively), and
// amqp091-go dispatches both from one goroutine, in that order: it hands
// the return to the NotifyReturn channel before it resolves the deferred
// confirm. So once a publish has its ack, its return, if any, is in the
// channel or already taken by another publish's drain. A drain happens
// under mu and assigns every return waiting in the channel to the publishes
// waiting with that message id; a publish drains after its confirm (or its
// failure) and only then looks at its own mark.
//
// A return carries no delivery tag, only the message's properties, so the
// match is by message id (the payment id). Two publishes of one payment in
// flight at once are both failed by the return of either: a spurious
// failure, which leaves the row to the relay; never a missed return.
type returns struct {
	ch <-chan amqp.Return

	mu      sync.Mutex
	waiting map[string][]*returnWait
}

// returnWait is one publish waiting for its confirm.
type returnWait struct {
	id       string
	returned *amqp.Return // set by a drain
}

// returnsBuffer bounds the returns held between drains. The library blocks
// its dispatch while the channel is full, so it must exceed the publishes
// in flight; every publish drains when it ends.
const returnsBuffer = 1024

// newReturns listens for the returns of ch.
func newReturns(ch *amqp.Channel) *returns {
	return &returns{
		ch:      ch.NotifyReturn(make(chan amqp.Return, returnsBuffer)),
		waiting: make(map[string][]*returnWait),
	}
}

// expect registers a publish of message id; call it before publishing and
// done after the confirm.
func (r *returns) expect(id string) *returnWait {
	w := &returnWait{id: id}
	r.mu.Lock()
	r.waiting[id] = append(r.waiting[id], w)
	r.mu.Unlock()
	return w
}

// done drains the returns received so far, unregisters w and returns the
// return of w's message, or nil.
func (r *returns) done(w *returnWait) *amqp.Return {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drain()
	ws := r.waiting[w.id]
	for i, o := range ws {
		if o == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(r.waiting, w.id)
	} else {
		r.waiting[w.id] = ws
	}
	return w.returned
}

// drain assigns every return in the channel to the publishes waiting for
// its message id; returns of publishes no longer waiting are dropped. The
// caller holds mu.
func (r *returns) drain() {
	for {
		select {
		case ret, ok := <-r.ch:
			if !ok {
				return
			}
			for _, w := range r.waiting[ret.MessageId] {
				w.returned = &ret
			}
		default:
			return
		}
	}
}
