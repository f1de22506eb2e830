// Package pspclient is the Go client of the oncepay payment-provider
// simulator (services/psp): charges with idempotency keys, and the admin
// endpoints for fault knobs and the ledger.
//
// Charge never retries. A call whose outcome is unknown (5xx, 409, timeout,
// dropped connection) fails with an error wrapping ErrTransient; retrying it
// with the same idempotency key is safe and returns the original charge if
// there was one. A Client is safe for concurrent use.
package pspclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client talks to one psp.
type Client struct {
	base  string
	token string // the admin token, sent with admin calls; "" for a charges client
	hc    *http.Client
}

// New returns a client for the psp at baseURL (e.g. "http://127.0.0.1:8090")
// using hc, or http.DefaultClient when hc is nil. Deadlines come from the
// contexts passed to each method, or hc.Timeout.
func New(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// NewAdmin returns a client for the psp's admin listener at adminURL
// (PSP_ADMIN_ADDR, e.g. "http://127.0.0.1:8092") that sends
// Authorization: Bearer token with every admin call (Config, SetConfig,
// Ledger, Summary, ResetLedger). A wrong token fails those calls with a
// *Error of status 401. Charge and Lookup are not served there.
func NewAdmin(adminURL, token string, hc *http.Client) *Client {
	c := New(adminURL, hc)
	c.token = token
	return c
}

// do sends one request. The body (marshalled from in unless nil) is given to
// net/http without GetBody, so the transport never silently resends a
// request that carries an Idempotency-Key: every dropped connection reaches
// the caller. It returns the response with its body read and closed.
func (c *Client) do(ctx context.Context, method, path string, header http.Header, in any) (*http.Response, []byte, error) {
	var body io.Reader
	var n int64
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, nil, fmt.Errorf("encode %T: %w", in, err)
		}
		body, n = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.ContentLength = n
	for k, v := range header {
		req.Header[k] = v
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, transient(fmt.Errorf("%s %s: %w", method, path, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, transient(fmt.Errorf("%s %s: read answer: %w", method, path, err))
	}
	return resp, b, nil
}

// call sends one admin request and decodes a 2xx answer into out (unless nil).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var header http.Header
	if c.token != "" {
		header = http.Header{"Authorization": {"Bearer " + c.token}}
	}
	resp, body, err := c.do(ctx, method, path, header, in)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s %s: %w", method, path, problemOf(resp, body))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}
