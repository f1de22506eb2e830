package broker

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncepay/oncepay/pkg/service/amqpconfirm"
	"github.com/oncepay/oncepay/pkg/service/dial"
	amqp "github.com/rabbitmq/amqp091-go"
)

// DialConfig tunes Dial.
type DialConfig struct {
	Name          string        // connection name shown by rabbitmqctl list_connections
	RetryInterval time.Duration // wait before each reconnect attempt (the library adds up to 500ms jitter)
	MaxRetries    int           // reconnect attempts before the connection closes for good
	Log           *slog.Logger
}

// Conn is a recovering AMQP connection.
type Conn struct {
	*amqp.Connection
	Epochs *Epochs

	confirms *amqpconfirm.Recovery // the publishing gates of its channels

	open     atomic.Bool
	dead     chan error    // receives once: why recovery gave up
	gone     chan struct{} // closed when recovery gave up
	goneOnce sync.Once
	log      *slog.Logger
}

// Dial connects to url with amqp091-go's built-in recovery switched on:
// Config.Recovery with the given retry interval and count, Epochs as the
// ConnectionRecovery (it wraps amqpconfirm.Recovery, which stops
// publishing on the channel while the library's default reopens it), the
// library's
// DefaultTopologyRecovery in TopologyRecoveryAllEnabled mode, and an
// OnTopologyEntityError that aborts the attempt (so that the library retries
// the whole reconnect) instead of skipping an entity, because a consumer
// that was skipped would leave the worker connected but idle.
//
// url is AMQP_URL: one amqp:// URL or the comma-separated URLs of a
// cluster's nodes. Config.Dial is dial.AMQPNodes.Dial: the first
// connection goes to the first node that answers, and every reconnect of
// the recovery to the next live one.
//
// The first connection is not retried: Dial fails and the caller exits.
func Dial(url string, cfg DialConfig) (*Conn, error) {
	nodes, err := dial.ParseAMQP(url)
	if err != nil {
		return nil, fmt.Errorf("AMQP_URL: %w", err)
	}
	confirms := amqpconfirm.NewRecovery(&amqp.DefaultConnectionRecovery{})
	epochs := NewEpochs(cfg.Log, confirms)
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(cfg.Name)
	ac, err := amqp.DialConfig(nodes.URL(), amqp.Config{
		Properties: props,
		Heartbeat:  10 * time.Second,
		Dial:       nodes.Dial(10 * time.Second),
		Recovery: &amqp.Recovery{
			ReconnectionConfig: &amqp.ReconnectionConfig{MaxRetryCount: cfg.MaxRetries, RetryInterval: cfg.RetryInterval},
			ConnectionRecovery: epochs,
			OnTopologyEntityError: func(_ *amqp.Connection, e amqp.TopologyRecoveryEntity) bool {
				cfg.Log.Warn("amqp topology recovery failed; retrying the reconnect", "entity", e.EntityType.String(), "name", e.EntityName, "err", e.Err)
				return false
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("amqp dial: %w", err)
	}
	epochs.attach(ac)
	c := &Conn{Connection: ac, Epochs: epochs, confirms: confirms, dead: make(chan error, 1), gone: make(chan struct{}), log: cfg.Log}
	c.open.Store(true)
	states := make(chan *amqp.StateChanged, 16)
	ac.NotifyStateChange(states)
	go c.watch(cfg.Log, states)
	return c, nil
}

// watch logs the connection's state changes and reports the end of recovery.
func (c *Conn) watch(log *slog.Logger, states <-chan *amqp.StateChanged) {
	for s := range states {
		c.open.Store(s.To == amqp.StateOpen)
		log.Info("amqp connection state", "from", s.From.String(), "to", s.To.String(), "err", s.Err)
		if s.To == amqp.StateClosed && s.Err != nil {
			c.fail(fmt.Errorf("amqp connection closed for good: %w", s.Err))
		}
	}
}

func (c *Conn) fail(err error) {
	c.goneOnce.Do(func() { close(c.gone) })
	select {
	case c.dead <- err:
	default:
	}
}

// Open reports whether the connection is open (not closed, not recovering).
func (c *Conn) Open() bool { return c.open.Load() && !c.IsClosed() }

// Dead receives, once, the reason the connection is beyond recovery.
func (c *Conn) Dead() <-chan error { return c.dead }
