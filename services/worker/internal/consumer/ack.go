package consumer

// acks batches the acks of one channel session into multiple acks
// (basic.ack with multiple set acknowledges every outstanding tag up to and
// including its own). Handlers finish out of order, so a multiple ack may
// only cover a prefix of tags that are all decided: acks holds every tag
// read and not yet decided as open, and a multiple ack reaches just below
// the lowest open tag. A tag that will be nacked, or that is left unsettled
// on purpose (shutdown), stays open until then, so no multiple ack can
// cover it. An ack above the lowest open tag waits one flush; if the
// prefix has not reached it by the next flush it is sent on its own, so a
// slow handler does not hold the acks of the others (and with them the
// channel's prefetch window).
//
// Tags are per channel session: the loop resets acks when a new session
// starts, and the acks still waiting are dropped (the broker requeued
// those deliveries when the session ended). acks is owned by the loop's
// goroutine.
type acks struct {
	session uint64
	epoch   uint64
	open    map[uint64]struct{} // read, not decided
	low     uint64              // no open tag is below low
	last    uint64              // highest tag read
	ready   []readyAck          // decided ack, not sent
}

// readyAck is an ack waiting to be sent.
type readyAck struct {
	t       tracked
	outcome string
	held    bool // waited one flush already
}

// sent is one ack to send: the tag, whether it is a multiple ack, and the
// deliveries it settles.
type sent struct {
	tag      uint64
	multiple bool
	settles  []readyAck
}

// read records t as open, resetting acks when t starts a new session; it
// returns the acks dropped by the reset.
func (a *acks) read(t tracked) (dropped []readyAck) {
	if a.open == nil || t.session != a.session || t.epoch != a.epoch {
		dropped = a.ready
		*a = acks{session: t.session, epoch: t.epoch, open: make(map[uint64]struct{}), low: t.d.DeliveryTag}
	}
	a.open[t.d.DeliveryTag] = struct{}{}
	a.last = max(a.last, t.d.DeliveryTag)
	return dropped
}

// current reports whether t belongs to the session acks tracks.
func (a *acks) current(t tracked) bool {
	return a.open != nil && t.session == a.session && t.epoch == a.epoch
}

// decided removes t from the open tags: it was nacked, or its ack is queued.
func (a *acks) decided(t tracked) {
	if !a.current(t) {
		return
	}
	delete(a.open, t.d.DeliveryTag)
	for a.low <= a.last {
		if _, ok := a.open[a.low]; ok {
			break
		}
		a.low++
	}
}

// queue records that t is to be acked.
func (a *acks) queue(t tracked, outcome string) {
	if !a.current(t) {
		return
	}
	a.decided(t)
	a.ready = append(a.ready, readyAck{t: t, outcome: outcome})
}

// pending is the number of acks waiting.
func (a *acks) pending() int { return len(a.ready) }

// flush returns the acks to send now: one multiple ack for the waiting
// acks below the lowest open tag (a single ack if there is only one), and a
// single ack for each waiting ack above it that already waited one flush
// (every one of them if all is set, as when the loop stops).
func (a *acks) flush(all bool) []sent {
	var (
		covered sent
		singles []sent
		keep    []readyAck
	)
	for _, r := range a.ready {
		tag := r.t.d.DeliveryTag
		switch {
		case tag < a.low:
			covered.tag = max(covered.tag, tag)
			covered.settles = append(covered.settles, r)
		case r.held || all:
			singles = append(singles, sent{tag: tag, settles: []readyAck{r}})
		default:
			r.held = true
			keep = append(keep, r)
		}
	}
	a.ready = keep
	out := make([]sent, 0, 1+len(singles))
	if len(covered.settles) > 0 {
		covered.multiple = len(covered.settles) > 1
		out = append(out, covered)
	}
	return append(out, singles...)
}
