package pspclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// ErrNoCharge is returned by Lookup when the psp has nothing under the key:
// no charge and no decline was ever made with it.
var ErrNoCharge = errors.New("psp: no charge under this idempotency key")

// Lookup returns the charge (or decline) the psp stored under
// idempotencyKey: the answer a Charge with that key got, or would have got
// had the answer not been lost. It never charges.
//
// Errors: errors.Is(err, ErrNoCharge) when nothing is stored under the key
// (a charge still being committed may appear later); errors.Is(err,
// ErrTransient) when the psp could not answer (ask again); otherwise a
// *Error or a decoding error.
func (c *Client) Lookup(ctx context.Context, idempotencyKey string) (Charge, error) {
	path := "/v1/charges?" + url.Values{"idempotency_key": {idempotencyKey}}.Encode()
	resp, body, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return Charge{}, fmt.Errorf("look up key %q: %w", idempotencyKey, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return Charge{}, fmt.Errorf("look up key %q: %w", idempotencyKey, ErrNoCharge)
	default:
		return Charge{}, fmt.Errorf("look up key %q: %w", idempotencyKey, problemOf(resp, body))
	}
	var ch Charge
	if err := json.Unmarshal(body, &ch); err != nil {
		return Charge{}, fmt.Errorf("look up key %q: decode answer: %w", idempotencyKey, err)
	}
	return ch, nil
}
