package dial

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// AMQPNodes is AMQP_URL parsed: the nodes of one RabbitMQ cluster (or the
// one broker), which agree on scheme, credentials and vhost.
type AMQPNodes struct {
	url   string   // the first URL: what amqp.DialConfig reads vhost and credentials from
	addrs []string // host:port of every node, in AMQP_URL's order
}

// ParseAMQP parses list, one amqp:// (or amqps://) URL or several separated
// by commas. Every URL must parse and name the same scheme, user, password
// and vhost: one connection's settings are used on whichever node it
// reaches. The error names the URL by its position, never quotes it.
func ParseAMQP(list string) (*AMQPNodes, error) {
	var n AMQPNodes
	var first amqp.URI
	urls := strings.Split(list, ",")
	for i, raw := range urls {
		raw = strings.TrimSpace(raw)
		u, err := amqp.ParseURI(raw)
		switch {
		case raw == "" && len(urls) > 1:
			return nil, fmt.Errorf("URL %d of the list is empty", i+1)
		case err != nil && len(urls) == 1:
			return nil, urlError(err)
		case err != nil:
			return nil, fmt.Errorf("URL %d of the list: %w", i+1, urlError(err))
		}
		if i == 0 {
			n.url, first = raw, u
		} else {
			switch {
			case u.Scheme != first.Scheme:
				return nil, fmt.Errorf("URL %d has scheme %s, URL 1 %s: every node must be reached alike", i+1, u.Scheme, first.Scheme)
			case u.Vhost != first.Vhost:
				return nil, fmt.Errorf("URL %d names vhost %q, URL 1 %q: the nodes of one cluster share the vhost", i+1, u.Vhost, first.Vhost)
			case u.Username != first.Username || u.Password != first.Password:
				return nil, fmt.Errorf("URL %d has other credentials than URL 1: the nodes of one cluster share them", i+1)
			}
		}
		n.addrs = append(n.addrs, net.JoinHostPort(u.Host, strconv.Itoa(u.Port)))
	}
	return &n, nil
}

// URL is the URL to pass to amqp.DialConfig with Config.Dial set to
// Dial: the first of the list (its vhost and credentials are every
// node's). Its host is not what Dial connects to.
func (n *AMQPNodes) URL() string { return n.url }

// Addrs returns every node's host:port, in the list's order.
func (n *AMQPNodes) Addrs() []string { return append([]string(nil), n.addrs...) }

// Dial returns an amqp.Config.Dial for one connection. It ignores the
// address it is given and dials the nodes in turn, each with timeout,
// starting after the node it last connected to (the first node on the
// first call), and returns the first connection made; when none answers,
// the error lists every node's. amqp091-go's connection recovery redials
// through Config.Dial, so a connection whose node died reconnects to the
// next live one. With one node it is amqp.DefaultDial(timeout).
//
// With amqps, the library verifies every node's certificate against the
// first URL's host name (or TLSClientConfig.ServerName): the nodes need a
// certificate valid for that name.
func (n *AMQPNodes) Dial(timeout time.Duration) func(network, addr string) (net.Conn, error) {
	var mu sync.Mutex
	last := len(n.addrs) - 1
	return func(network, _ string) (net.Conn, error) {
		mu.Lock()
		start := last + 1
		mu.Unlock()
		var errs []error
		for i := range n.addrs {
			k := (start + i) % len(n.addrs)
			c, err := amqp.DefaultDial(timeout)(network, n.addrs[k])
			if err == nil {
				mu.Lock()
				last = k
				mu.Unlock()
				return c, nil
			}
			errs = append(errs, fmt.Errorf("node %d: %w", k+1, err))
		}
		return nil, errors.Join(errs...)
	}
}

// AMQP connects to the nodes of list (ParseAMQP) with cfg, its Dial set
// to the rotating AMQPNodes.Dial with timeout (a Dial already in cfg is
// replaced). cfg's Recovery, if any, then redials through the same
// rotation.
func AMQP(list string, cfg amqp.Config, timeout time.Duration) (*amqp.Connection, error) {
	n, err := ParseAMQP(list)
	if err != nil {
		return nil, err
	}
	cfg.Dial = n.Dial(timeout)
	return amqp.DialConfig(n.URL(), cfg)
}
