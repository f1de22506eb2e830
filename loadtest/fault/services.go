package fault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/oncepay/oncepay/pkg/service/dial"
	amqp "github.com/rabbitmq/amqp091-go"
)

// Broker deletes queues over AMQP 0-9-1 (queue.delete), on any runtime
// whose broker faultd reaches. It is safe for concurrent use.
type Broker struct {
	URL string // AMQP_URL: amqp://user:pass@host:port/vhost, or a cluster's nodes comma-separated
}

// DeleteQueue deletes queue and the messages in it, with or without
// consumers (RabbitMQ cancels them), and returns how many it held.
func (b *Broker) DeleteQueue(ctx context.Context, queue string) (int, error) {
	conn, err := dial.AMQP(b.URL, amqp.Config{}, 5*time.Second)
	if err != nil {
		return 0, fmt.Errorf("delete queue %s: dial: %w", queue, err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, fmt.Errorf("delete queue %s: channel: %w", queue, err)
	}
	defer ch.Close()
	n, err := ch.QueueDelete(queue, false, false, false)
	if err != nil {
		return 0, fmt.Errorf("delete queue %s: %w", queue, err)
	}
	return n, ctx.Err()
}

// PSPFaults carries out the psp's fault kinds (psp-outage, reject-psp)
// through its admin API; a backend embeds it to be a fault.Outager and a
// fault.Rejecter on any runtime whose psp admin listener it can reach. A
// nil PSP refuses both with an error naming the settings it lacks.
type PSPFaults struct {
	PSP *PSPAdmin
}

// PSPOutage takes the psp down for d (PSPAdmin.Outage).
func (f PSPFaults) PSPOutage(ctx context.Context, d time.Duration) error {
	if f.PSP == nil {
		return errors.New("psp outage: no psp admin API configured (PSP_ADMIN_URL, PSP_ADMIN_TOKEN)")
	}
	return f.PSP.Outage(ctx, d)
}

// PSPReject makes the psp reject share of the charges for d
// (PSPAdmin.Reject).
func (f PSPFaults) PSPReject(ctx context.Context, share float64, d time.Duration) error {
	if f.PSP == nil {
		return errors.New("psp reject: no psp admin API configured (PSP_ADMIN_URL, PSP_ADMIN_TOKEN)")
	}
	return f.PSP.Reject(ctx, share, d)
}

// PSPAdmin drives the psp simulator's admin API (docs/psp.md). It is safe
// for concurrent use, but outages must not overlap: each puts back the
// configuration it found.
type PSPAdmin struct {
	URL    string // the psp's admin listener (PSP_ADMIN_ADDR), http://host:port
	Token  string // its bearer token (PSP_ADMIN_TOKEN)
	Client *http.Client
}

// RejectKnob is the psp knob (GET/PUT /admin/config) that Reject sets:
// the probability that a charge call is rejected permanently, answered
// with a 4xx and its reason, nothing charged.
const RejectKnob = "reject_rate"

// Reject sets the psp's RejectKnob to share for d, then puts back the
// value it found, also when ctx ends first. The psp is also told the
// window (reject_for_ms), so it ends the rejects by itself should the
// caller die before it puts the knob back.
func (p *PSPAdmin) Reject(ctx context.Context, share float64, d time.Duration) error {
	if err := p.hold(ctx, map[string]any{RejectKnob: share, "reject_for_ms": d.Milliseconds()}, d); err != nil {
		return fmt.Errorf("psp reject: %w", err)
	}
	return nil
}

// Outage sets the psp's fail_before_rate to 1 (every call answered 503,
// nothing charged) for d, then puts back the configuration it found, also
// when ctx ends first.
func (p *PSPAdmin) Outage(ctx context.Context, d time.Duration) error {
	if err := p.hold(ctx, map[string]any{"fail_before_rate": 1}, d); err != nil {
		return fmt.Errorf("psp outage: %w", err)
	}
	return nil
}

// hold applies patch to the psp's configuration for d, then puts back
// the values the patched knobs had, also when ctx ends first. Only those:
// GET /admin/config also reports read-only state (reject_until) that a
// PUT refuses.
func (p *PSPAdmin) hold(ctx context.Context, patch map[string]any, d time.Duration) error {
	found, err := p.config(ctx, http.MethodGet, nil)
	if err != nil {
		return err
	}
	before := make(map[string]any, len(patch))
	for k := range patch {
		if k == "reject_for_ms" { // a window, not a knob: it ends by itself
			continue
		}
		v, ok := found[k]
		if !ok {
			return fmt.Errorf("GET /admin/config: no knob %q", k)
		}
		before[k] = v
	}
	if _, err := p.config(ctx, http.MethodPut, patch); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	restore, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := p.config(restore, http.MethodPut, before); err != nil {
		return fmt.Errorf("put the configuration back: %w", err)
	}
	return nil
}

// config reads (GET) or patches (PUT) /admin/config and returns the
// knobs in force afterwards.
func (p *PSPAdmin) config(ctx context.Context, method string, body map[string]any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.URL+"/admin/config", rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.Token)
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return nil, fmt.Errorf("%s /admin/config: %s: %s", method, res.Status, bytes.TrimSpace(b))
	}
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s /admin/config: %w", method, err)
	}
	return out, nil
}
