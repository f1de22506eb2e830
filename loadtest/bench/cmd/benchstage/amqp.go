package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/pace"
	"github.com/oncepay/oncepay/pkg/message"
	amqp "github.com/rabbitmq/amqp091-go"
)

type amqpConfig struct {
	URL      string
	Rate     float64
	Duration time.Duration
	Workers  int
	Queue    string
}

// amqpResult is the publish schedule's result plus what the consumer did.
type amqpResult struct {
	pace.Result
	Consumed        int     `json:"consumed"`         // acked by the consumer before it stopped
	ConsumeRate     float64 `json:"consume_rate"`     // Consumed per second of the schedule
	BacklogAtEnd    int     `json:"backlog_at_end"`   // ready messages left when the schedule ended
	ConsumerKeptUp  bool    `json:"consumer_kept_up"` // the consumer drained within 2 s of the schedule
	PublishConfirms bool    `json:"publish_confirms"` // always true: every publish waited for its confirm
}

// KeptUp: the publisher kept its schedule and the consumer kept up with it.
func (r amqpResult) KeptUp() bool { return r.Result.KeptUp() && r.ConsumerKeptUp }

// payload is about the size of the api's payment.initiated message.
const payload = `{"payment_id":"pay_eyrqugjderfj64zgi22bu7h6ui","merchant_id":"merchant_a","idempotency_key":"bench-0000000000","amount":1250,"currency":"EUR","customer_id":"cus_42"}`

// runAMQP publishes persistent messages with confirms to a quorum queue at
// cfg.Rate per second (one channel in confirm mode shared by the workers,
// like the api's outbox publisher) while a consumer on its own connection
// acks each message, like the worker.
func runAMQP(ctx context.Context, cfg amqpConfig) (amqpResult, error) {
	pubConn, err := amqp.Dial(cfg.URL)
	if err != nil {
		return amqpResult{}, fmt.Errorf("dial: %w", err)
	}
	defer pubConn.Close()
	subConn, err := amqp.Dial(cfg.URL)
	if err != nil {
		return amqpResult{}, fmt.Errorf("dial: %w", err)
	}
	defer subConn.Close()

	pub, err := pubConn.Channel()
	if err != nil {
		return amqpResult{}, err
	}
	if _, err := pub.QueueDeclare(cfg.Queue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		return amqpResult{}, fmt.Errorf("declare %s: %w", cfg.Queue, err)
	}
	if _, err := pub.QueuePurge(cfg.Queue, false); err != nil {
		return amqpResult{}, fmt.Errorf("purge %s: %w", cfg.Queue, err)
	}
	if err := pub.Confirm(false); err != nil {
		return amqpResult{}, err
	}

	sub, err := subConn.Channel()
	if err != nil {
		return amqpResult{}, err
	}
	if err := sub.Qos(128, 0, false); err != nil {
		return amqpResult{}, err
	}
	deliveries, err := sub.ConsumeWithContext(ctx, cfg.Queue, "benchstage", false, false, false, false, nil)
	if err != nil {
		return amqpResult{}, err
	}
	var consumed atomic.Int64
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for d := range deliveries {
			if d.Ack(false) == nil {
				consumed.Add(1)
			}
		}
	}()

	res := pace.Run(ctx, pace.Config{Rate: cfg.Rate, Duration: cfg.Duration, Workers: cfg.Workers},
		func(ctx context.Context, i int) error {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			conf, err := pub.PublishWithDeferredConfirmWithContext(ctx, "", cfg.Queue, true, false, amqp.Publishing{
				ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: strconv.Itoa(i),
				Headers: amqp.Table{message.HeaderIdempotencyKey: "bench-" + strconv.Itoa(i), message.HeaderMerchantID: "merchant_a"},
				Body:    []byte(payload),
			})
			if err != nil {
				return err
			}
			ok, err := conf.WaitContext(ctx)
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("nacked")
			}
			return nil
		})
	out := amqpResult{Result: res, PublishConfirms: true}
	if q, err := pub.QueueDeclarePassive(cfg.Queue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err == nil {
		out.BacklogAtEnd = q.Messages
	}
	deadline := time.Now().Add(2 * time.Second)
	for consumed.Load() < int64(res.Done) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out.ConsumerKeptUp = consumed.Load() >= int64(float64(res.Done)*0.99)
	sub.Cancel("benchstage", false)
	<-consumerDone
	out.Consumed = int(consumed.Load())
	out.ConsumeRate = float64(out.Consumed) / cfg.Duration.Seconds()
	if _, err := pub.QueueDelete(cfg.Queue, false, false, false); err != nil {
		return out, fmt.Errorf("delete %s: %w", cfg.Queue, err)
	}
	return out, nil
}
