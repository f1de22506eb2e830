package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/pkg/service/amqpconfirm"
	"github.com/oncepay/oncepay/pkg/service/dial"
	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel/trace"
)

// Errors returned by Publisher.Publish, besides the client library's own.
var (
	// ErrNotConnected: the connection or channel is not open (never opened
	// yet, or being recovered). The message was not sent.
	ErrNotConnected = errors.New("outbox: rabbitmq not connected")
	// ErrNacked: the broker refused the message (negative confirm), or the
	// channel closed before the message's confirm came (it is recovered;
	// the message may or may not have reached a queue).
	ErrNacked = errors.New("outbox: publish not confirmed by the broker")
	// ErrReturned: the broker returned the message as unroutable (no
	// queue is bound for it): no queue took it.
	ErrReturned = errors.New("outbox: publish returned unroutable by the broker")
)

// PublisherConfig says where to publish.
type PublisherConfig struct {
	// URL is AMQP_URL: one amqp:// URL or the comma-separated URLs of a
	// cluster's nodes; connections rotate through them (dial.AMQPNodes).
	URL string
	// Topology is where messages go: the exchange they are published to
	// and the queue bound to it. The Publisher declares it (see Start),
	// with the worker's definition, so that a message has a queue to go
	// to even before the first worker connects.
	Topology message.Topology
	// ConnectionName is shown in the RabbitMQ management UI.
	ConnectionName string
	// RetryInterval is the pause between connection attempts, both before the
	// first connection and during the client library's recovery. Default 1s.
	RetryInterval time.Duration
	// Tracer, if not nil, traces every publish (see Publish); nil (tracing
	// off) adds nothing to a publish.
	Tracer trace.Tracer
}

// Publisher publishes outbox messages with publisher confirms over one AMQP
// connection and channel, mandatory: a message counts as published only
// when the broker confirmed it and did not return it as unroutable.
//
// It declares the topology (PublisherConfig.Topology) when it connects,
// after every recovery, and returnedDeclareDelay after a message was
// returned (the queue was deleted, or the broker lost its definitions), so
// whichever service connects first restores the queue; the relay then
// publishes the returned message again. The declaration runs on a channel of its own: a queue
// that exists with other arguments (PRECONDITION_FAILED) closes only that
// channel, and is logged.
//
// Reconnection is the client library's built-in recovery (amqp091-go
// Config.Recovery): after a broker restart or a channel error it redials,
// reopens the channel in confirm mode and re-declares the exchange. Publish
// sends nothing while that runs (pkg/service/amqpconfirm's gate), so every
// confirm settles its own message. The library starts recovery only after a first successful
// handshake, so Start keeps retrying that first dial itself. Its methods
// are safe for concurrent use.
type Publisher struct {
	cfg PublisherConfig
	log *slog.Logger

	mu      sync.Mutex
	conn    *amqp.Connection
	returns *returns
	closed  bool

	declaring atomic.Bool // a declareLater is running

	// recovery wraps the library's connection recovery; gate (under mu,
	// set once the publishing channel is in confirm mode) sends only while
	// that channel is open in confirm mode, never while it is recovered.
	recovery *amqpconfirm.Recovery
	gate     *amqpconfirm.Gate

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewPublisher returns a Publisher; call Start to connect.
func NewPublisher(cfg PublisherConfig, log *slog.Logger) *Publisher {
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = time.Second
	}
	return &Publisher{cfg: cfg, log: log, stop: make(chan struct{}), recovery: amqpconfirm.NewRecovery(nil)}
}

// Start connects, opens a confirm-mode channel, declares the exchange
// (topic, durable) on it and the topology on a channel of its own. If the
// connection or the channel fails it logs the error and keeps trying in the
// background every RetryInterval until it succeeds or Close is called; until
// then Publish returns ErrNotConnected. Start does not block on retries.
func (p *Publisher) Start() {
	err := p.connect()
	if err == nil {
		return
	}
	p.log.Warn("rabbitmq not reachable, retrying in the background", "err", err, "every", p.cfg.RetryInterval.String())
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.cfg.RetryInterval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			err := p.connect()
			if err == nil || p.isClosed() {
				return
			}
			p.log.Debug("rabbitmq connect", "err", err)
		}
	}()
}

func (p *Publisher) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *Publisher) connect() error {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(p.cfg.ConnectionName)
	nodes, err := dial.ParseAMQP(p.cfg.URL)
	if err != nil {
		return fmt.Errorf("AMQP_URL: %w", err)
	}
	conn, err := amqp.DialConfig(nodes.URL(), amqp.Config{
		// every dial, the first and the recovery's, goes to the next live node
		Dial:       nodes.Dial(5 * time.Second),
		Properties: props,
		Recovery: &amqp.Recovery{
			ReconnectionConfig: &amqp.ReconnectionConfig{
				// Never give up: a broker outage must not need an api restart.
				MaxRetryCount: math.MaxInt32,
				RetryInterval: p.cfg.RetryInterval,
			},
			ConnectionRecovery: p.recovery,
		},
	})
	if err != nil {
		return fmt.Errorf("dial rabbitmq: %w", err)
	}
	ch, err := p.setup(conn)
	if err != nil {
		_ = conn.Close() // the setup error is the one to report
		return err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = conn.Close() // closing anyway; ErrClosed says why
		return amqp.ErrClosed
	}
	p.conn, p.returns, p.gate = conn, newReturns(ch), p.recovery.Gate(ch)
	connStates := make(chan *amqp.StateChanged, 8)
	chStates := make(chan *amqp.StateChanged, 8)
	conn.NotifyStateChange(connStates)
	ch.NotifyStateChange(chStates)
	p.wg.Add(2)
	go p.watch("connection", connStates)
	go p.watch("channel", chStates)
	p.mu.Unlock()
	p.log.Info("rabbitmq connected", "exchange", p.cfg.Topology.Exchange, "queue", p.cfg.Topology.Queue)
	if err := p.declare(); err != nil {
		p.log.Warn("rabbitmq: declare topology", "why", "connected", "err", err)
	}
	return nil
}

// returnedDeclareDelay is how long the Publisher waits after a returned
// message before it declares the topology. The broker cancels every
// consumer of a deleted queue; a queue declared again with the same name
// before a consumer's channel has processed the deletion leaves that
// consumer attached to nothing, never cancelled (seen with quorum queues
// on RabbitMQ 3.10 when the new declaration follows within a few
// milliseconds). The worker waits as long before it declares the queue.
const returnedDeclareDelay = time.Second

// declareLater declares the topology in the background after delay, unless
// a declaration is pending already; why is logged.
func (p *Publisher) declareLater(why string, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !p.declaring.CompareAndSwap(false, true) {
		return
	}
	p.wg.Add(1) // under mu: Close sets closed under mu before it waits
	go func() {
		defer p.wg.Done()
		defer p.declaring.Store(false)
		select {
		case <-p.stop:
			return
		case <-time.After(delay):
		}
		if err := p.declare(); err != nil {
			p.log.Warn("rabbitmq: declare topology", "why", why, "err", err)
			return
		}
		p.log.Debug("rabbitmq: topology declared", "why", why)
	}()
}

// declare declares the topology on a channel of its own, closed after.
func (p *Publisher) declare() error {
	p.mu.Lock()
	conn, closed := p.conn, p.closed
	p.mu.Unlock()
	if conn == nil || closed {
		return ErrNotConnected
	}
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	return p.cfg.Topology.Declare(ch)
}

// setup opens the publishing channel in confirm mode and declares the
// exchange; the library records the declaration and repeats it on recovery.
func (p *Publisher) setup(conn *amqp.Connection) (*amqp.Channel, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return nil, fmt.Errorf("confirm mode: %w", err)
	}
	x := p.cfg.Topology.Exchange
	if err := ch.ExchangeDeclare(x, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		return nil, fmt.Errorf("declare exchange %q: %w", x, err)
	}
	return ch, nil
}

// watch follows one lifecycle until the library closes the notification
// channel (after StateClosed) or Close stops the Publisher, logging each
// transition. It does not decide when Publish may send (the gate does,
// synchronously). amqp091-go does not always close a channel's
// notification channel when the connection is closed during that
// channel's recovery, so Close does not wait for it: after the stop the
// rest is drained in the background, which keeps the library from
// blocking on a full notification channel.
func (p *Publisher) watch(what string, states <-chan *amqp.StateChanged) {
	defer p.wg.Done()
	for {
		var s *amqp.StateChanged
		var ok bool
		select {
		case s, ok = <-states:
		case <-p.stop:
			go func() {
				for range states {
				}
			}()
			return
		}
		if !ok {
			return
		}
		switch {
		case s.To == amqp.StateOpen:
			p.log.Info("rabbitmq "+what+" open", "from", s.From.String())
			if what == "connection" {
				p.declareLater("recovered", 0)
			}
		case s.Err != nil:
			p.log.Warn("rabbitmq "+what+" "+s.To.String(), "err", s.Err)
		default:
			p.log.Info("rabbitmq "+what+" "+s.To.String(), "from", s.From.String())
		}
	}
}

// Publish sends m to the exchange, mandatory, and waits for the broker's
// confirm until ctx ends. It returns nil only when a queue took m: a
// positive confirm with no basic.return before it. Otherwise it returns
// ErrNotConnected when there is no open channel, ErrReturned when the
// broker returned m as unroutable (and it starts a declaration of the
// topology, for the next attempt), ErrNacked for a negative confirm, or the
// context's error. After any error m may or may not have reached a queue.
// With a Tracer, the publish is a producer span, child of the span in ctx,
// whose context the message carries in its traceparent header.
func (p *Publisher) Publish(ctx context.Context, m Message) (err error) {
	if p.cfg.Tracer != nil {
		var span trace.Span
		ctx, span = startPublish(ctx, p.cfg.Tracer, p.cfg.Topology.Exchange, m)
		defer func() { endPublish(span, err) }()
	}
	p.mu.Lock()
	rets, gate := p.returns, p.gate
	p.mu.Unlock()
	if rets == nil || gate == nil {
		return fmt.Errorf("publish %s: %w", m.PaymentID, ErrNotConnected)
	}
	pub := m.publishing()
	if p.cfg.Tracer != nil {
		inject(ctx, pub.Headers)
	}
	w := rets.expect(m.PaymentID)
	err = gate.Publish(ctx, p.cfg.Topology.Exchange, m.RoutingKey, true, pub)
	ret := rets.done(w)
	switch {
	case errors.Is(err, amqpconfirm.ErrClosed):
		return fmt.Errorf("publish %s: %w", m.PaymentID, ErrNotConnected)
	case errors.Is(err, amqpconfirm.ErrNacked), errors.Is(err, amqpconfirm.ErrUnconfirmed):
		// the channel closing before the confirm fails m as a nack does:
		// the relay publishes it again
		return fmt.Errorf("publish %s: %w", m.PaymentID, ErrNacked)
	case err != nil:
		return fmt.Errorf("publish %s: %w", m.PaymentID, err)
	case ret != nil:
		p.declareLater("message returned", returnedDeclareDelay)
		return fmt.Errorf("publish %s: %w: %d %s", m.PaymentID, ErrReturned, ret.ReplyCode, ret.ReplyText)
	}
	return nil
}

// Check reports whether the connection and channel are open, for readiness.
func (p *Publisher) Check(context.Context) error {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	switch {
	case gate == nil:
		return fmt.Errorf("%w: first connection not made yet", ErrNotConnected)
	case !gate.Ready():
		return fmt.Errorf("%w: connection or channel recovering", ErrNotConnected)
	}
	return nil
}

// Close stops connecting and recovering and closes the connection. Pending
// confirms are abandoned (their rows stay for the relay). It waits for the
// background goroutines and is idempotent.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.stop)
	conn, gate := p.conn, p.gate
	p.mu.Unlock()
	if gate != nil {
		gate.Close()
	}
	var err error
	if conn != nil {
		if err = conn.Close(); errors.Is(err, amqp.ErrClosed) {
			err = nil
		}
	}
	p.wg.Wait()
	return err
}
