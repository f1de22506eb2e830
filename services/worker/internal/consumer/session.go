package consumer

import amqp "github.com/rabbitmq/amqp091-go"

// session tells deliveries of the live channel session from leftovers of a
// lost one. It relies on two facts: a channel session numbers its deliveries
// 1, 2, 3, ... (one consumer, no basic.get), and the library hands them to
// the loop in that order, old session first. With the epoch (bumped before
// the library reconnects, see broker.Epochs):
//
//   - epoch unchanged, tag above the last one: same session;
//   - epoch changed, tag 1: the first delivery of the new session;
//   - epoch changed, any other tag: read from the lost session after the loss,
//     stale (the broker has requeued it);
//   - epoch unchanged, tag not above the last one: a new session that the
//     epoch did not see (defensive; counted as a new session).
//
// A session id, bumped on every new session, marks deliveries still in the
// handlers when their session ends: they are stale too.
type session struct {
	epoch   uint64 // the epoch the current session started in
	id      uint64 // increments with every new session
	lastTag uint64 // last delivery tag read in the current session
}

// tracked is a delivery and the session it came from.
type tracked struct {
	d       amqp.Delivery
	epoch   uint64
	session uint64
}

// track classifies d, read while the channel was in epoch. It returns false
// for a stale delivery.
func (s *session) track(d amqp.Delivery, epoch uint64) (tracked, bool) {
	switch {
	case epoch != s.epoch:
		if d.DeliveryTag != 1 {
			return tracked{}, false
		}
		s.epoch, s.id = epoch, s.id+1
	case d.DeliveryTag <= s.lastTag:
		s.id++
	}
	s.lastTag = d.DeliveryTag
	return tracked{d: d, epoch: s.epoch, session: s.id}, true
}

// live reports whether t belongs to the current session (the epoch check
// happens again, under the guard's lock, when settling).
func (s *session) live(t tracked) bool { return t.session == s.id && t.epoch == s.epoch }
