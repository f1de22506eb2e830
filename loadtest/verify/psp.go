package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Ledger reads the psp simulator's ledger over its admin API.
type Ledger struct {
	URL    string // the psp's admin listener, e.g. http://127.0.0.1:8092
	Token  string // its bearer token (PSP_ADMIN_TOKEN)
	Client *http.Client
}

type ledgerJSON struct {
	Calls []struct {
		ReceivedAt     time.Time `json:"received_at"`
		IdempotencyKey *string   `json:"idempotency_key"`
		Reference      *string   `json:"reference"`
		Amount         *int64    `json:"amount"`
		Outcome        string    `json:"outcome"`
		ChargeID       *string   `json:"charge_id"`
		HTTPStatus     *int      `json:"http_status"`
	} `json:"calls"`
	Charges []Charge `json:"charges"`
}

// read returns the run's effective charges, its calls by outcome and the
// calls themselves. A
// call or charge belongs to the run when its idempotency key is
// <merchant>:<run id>-..., or its reference is one of the run's payments.
func (p Ledger) read(ctx context.Context, runID string, payments map[string]bool) ([]Charge, map[string]int, []PSPCall, error) {
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(p.URL, "/")+"/admin/ledger", nil)
	if err != nil {
		return nil, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
	res, err := client.Do(req)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("psp ledger: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, nil, nil, fmt.Errorf("psp ledger: %s", res.Status)
	}
	var l ledgerJSON
	if err := json.NewDecoder(res.Body).Decode(&l); err != nil {
		return nil, nil, nil, fmt.Errorf("psp ledger: %w", err)
	}
	mine := func(key, ref *string) bool {
		if ref != nil && payments[*ref] {
			return true
		}
		if key == nil {
			return false
		}
		_, rest, ok := strings.Cut(*key, ":")
		return ok && (runID == "" || strings.HasPrefix(rest, runID+"-"))
	}
	calls := map[string]int{}
	var log []PSPCall
	for _, c := range l.Calls {
		if !mine(c.IdempotencyKey, c.Reference) {
			continue
		}
		calls[c.Outcome]++
		log = append(log, PSPCall{ReceivedAt: c.ReceivedAt, IdempotencyKey: deref(c.IdempotencyKey), Reference: deref(c.Reference),
			Amount: deref(c.Amount), Outcome: c.Outcome, ChargeID: deref(c.ChargeID), HTTPStatus: deref(c.HTTPStatus)})
	}
	var charges []Charge
	for _, c := range l.Charges {
		if mine(&c.IdempotencyKey, &c.Reference) {
			charges = append(charges, c)
		}
	}
	return charges, calls, log, nil
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
