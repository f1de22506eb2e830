package idemhttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// wait answers a request whose key is in progress (inProgress, Begin's
// error) when it asked to wait (Prefer: wait=N, RFC 7240): it calls Begin
// again, with pauses from 50ms doubling to 500ms, until the first request's
// answer is stored (the replay), the key is free again (this request
// claims it) or min(N seconds, MaxWait) has passed or the client hung up
// (inProgress: 409). Without the preference it returns inProgress.
func (m *middleware) wait(x *exchange, inProgress error) (Claim, error) {
	d, ok := preferWait(x.from.Header)
	if !ok || m.cfg.MaxWait < 0 {
		return Claim{}, inProgress
	}
	ctx, cancel := context.WithTimeout(x.ctx, min(d, m.cfg.MaxWait))
	defer cancel()
	detached := context.WithoutCancel(x.ctx)
	pause := 50 * time.Millisecond
	for {
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return Claim{}, inProgress
		case <-t.C:
		}
		claim, err := m.cfg.Boundary.Begin(detached, x.info.Key, m.cfg.Stage, x.info.Fingerprint)
		if !errors.Is(err, idem.ErrInProgress) {
			return claim, err
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// preferWait returns the wait preference of h (Prefer: wait=N, in whole
// seconds), if any.
func preferWait(h http.Header) (time.Duration, bool) {
	for _, v := range h.Values("Prefer") {
		for _, pref := range strings.Split(v, ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(pref), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			secs, err := strconv.Atoi(strings.Trim(strings.TrimSpace(val), `"`))
			if err == nil && secs > 0 {
				return time.Duration(secs) * time.Second, true
			}
		}
	}
	return 0, false
}
