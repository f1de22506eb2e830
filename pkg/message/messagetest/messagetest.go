// Package messagetest removes what tests declared on RabbitMQ. It is test
// rig: product code must not import it.
package messagetest

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/pkg/message"
)

// DeleteTopology deletes topo's queue, dead-letter queue, exchange and
// dead-letter exchange, and extraQueues, on the broker at url, whether or
// not they are in use. It is for test clean-up: it tries every deletion on
// a channel of its own, so that one failure does not stop the rest, and
// ignores every error (a broker that is gone has nothing left to delete).
func DeleteTopology(url string, topo message.Topology, extraQueues ...string) {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)})
	if err != nil {
		return
	}
	defer conn.Close()
	do := func(del func(ch *amqp.Channel) error) {
		if ch, err := conn.Channel(); err == nil {
			_ = del(ch)
			_ = ch.Close()
		}
	}
	for _, q := range append([]string{topo.Queue, topo.DeadLetterQueue()}, extraQueues...) {
		do(func(ch *amqp.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err })
	}
	for _, x := range []string{topo.Exchange, topo.DeadLetterExchange()} {
		do(func(ch *amqp.Channel) error { return ch.ExchangeDelete(x, false, false) })
	}
}
