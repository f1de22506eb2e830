package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/internal/testenv/confirmtest"
)

// TestConfirmsExactAcrossChannelRecovery: several consumers on one
// connection each publish, one publish at a time as the consumer loop does,
// to a queue that rejects when full (x-max-length, x-overflow
// reject-publish: the broker nacks what it does not take), drained by a
// slower consumer so that acks and nacks interleave; meanwhile their
// channels are closed by channel errors (a passive declare of a missing
// exchange) again and again, and amqp091-go recovers them.
//
// Whatever Publish reports as confirmed must be in the queue (safety), and
// no publish may wait out its whole timeout for a confirm that never comes
// (liveness): the broker answers every publish of a channel in confirm
// mode, so a publish waits only for its own confirm or for the end of its
// channel session. A publish sent while the library reopens a channel,
// before confirm mode is back, gets no confirm and shifts every later
// confirm of the channel by one; each later publish then waits for a
// confirm that only the next one brings.
func TestConfirmsExactAcrossChannelRecovery(t *testing.T) {
	url, topo, conn := dialTest(t)
	adminConn(t, url, topo)
	limited := topo.Queue + ".limited"
	var conss []*Consumer
	for i := range 4 {
		cons, err := conn.Consume(topo, 4, fmt.Sprintf("broker-test-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		conss = append(conss, cons)
	}
	res := confirmtest.Run(t, confirmtest.Config{
		URL: url, Queue: limited, Publishers: len(conss), Timeout: 5 * time.Second,
		Publish: func(ctx context.Context, g int, id string) error {
			return conss[g].Publisher.Publish(ctx, limited, amqp.Publishing{MessageId: id, Body: []byte(`{}`)})
		},
		Break:      func() bool { return breakChannel(conss[rand.IntN(len(conss))], "no-such-exchange-"+topo.Exchange) },
		BreakEvery: 25 * time.Millisecond,
	})
	if res.TimedOut > 0 {
		t.Errorf("%d publishes waited 5s for a confirm that never came", res.TimedOut)
	}
}

// breakChannel makes the broker close cons's channel with a channel error
// (404 on a passive declare of a missing exchange), when it is open in
// confirm mode (a call during the library's reopen would break the reopen
// instead); it reports whether it did.
func breakChannel(cons *Consumer, missing string) bool {
	ran, err := cons.Publisher.gate.Do(func(ch *amqp.Channel) error {
		return ch.ExchangeDeclarePassive(missing, amqp.ExchangeTopic, true, false, false, false, nil)
	})
	return ran && err != nil
}
