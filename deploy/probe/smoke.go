package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// payment is the part of the api's payment JSON the smoke test looks at.
type payment struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	PSPChargeID string `json:"psp_charge_id"`
}

// runSmoke drives one payment through the public contract: POST (202),
// replay with the same key (same body, Idempotent-Replayed: true), GET by id,
// then poll until the worker charged it through the psp (succeeded).
func runSmoke(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe smoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	api := fs.String("api", "http://127.0.0.1:8080", "base URL of the api")
	wait := fs.Duration("wait", 60*time.Second, "how long to wait for a terminal status; 0 skips the wait")
	timeout := fs.Duration("timeout", 10*time.Second, "per-request timeout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	key := getenv("PROBE_API_KEY")
	if key == "" {
		return errors.New("PROBE_API_KEY is not set (a merchant api key)")
	}
	s := smoke{base: strings.TrimRight(*api, "/"), key: key, client: &http.Client{Timeout: *timeout}}

	idemKey := "smoke-" + randomHex(8)
	body := fmt.Sprintf(`{"amount":1234,"currency":"EUR","customer_id":"smoke","description":"probe smoke %s"}`, idemKey)

	first, firstBody, err := s.post(ctx, idemKey, body)
	if err != nil {
		return err
	}
	if first.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST /v1/payments: got %s, want 202 Accepted: %s", first.Status, firstBody)
	}
	var p payment
	if err := json.Unmarshal(firstBody, &p); err != nil || p.ID == "" {
		return fmt.Errorf("POST /v1/payments: no payment id in %s (%v)", firstBody, err)
	}
	fmt.Fprintf(stdout, "POST /v1/payments -> %d id=%s status=%s\n", first.StatusCode, p.ID, p.Status)

	replay, replayBody, err := s.post(ctx, idemKey, body)
	if err != nil {
		return err
	}
	if replay.StatusCode != first.StatusCode || !bytes.Equal(replayBody, firstBody) {
		return fmt.Errorf("replay: got %s %s, want the first answer %s %s", replay.Status, replayBody, first.Status, firstBody)
	}
	if replay.Header.Get("Idempotent-Replayed") != "true" {
		return fmt.Errorf("replay: Idempotent-Replayed header is %q, want true", replay.Header.Get("Idempotent-Replayed"))
	}
	fmt.Fprintf(stdout, "replay           -> %d, identical body, Idempotent-Replayed: true\n", replay.StatusCode)

	deadline := time.Now().Add(*wait)
	for {
		got, err := s.get(ctx, p.ID)
		if err != nil {
			return err
		}
		if got.ID != p.ID || got.Amount != 1234 {
			return fmt.Errorf("GET /v1/payments/%s: got id=%s amount=%d, want id=%s amount=1234", p.ID, got.ID, got.Amount, p.ID)
		}
		switch {
		case got.Status == "succeeded":
			fmt.Fprintf(stdout, "GET /v1/payments/%s -> succeeded psp_charge_id=%s\n", p.ID, got.PSPChargeID)
			return nil
		case got.Status == "failed":
			return fmt.Errorf("payment %s failed (is the psp configured with faults?)", p.ID)
		case *wait == 0:
			fmt.Fprintf(stdout, "GET /v1/payments/%s -> %s (not waiting)\n", p.ID, got.Status)
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("payment %s still %s after %s: is the worker consuming and the psp up?", p.ID, got.Status, *wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

type smoke struct {
	base   string
	key    string
	client *http.Client
}

func (s smoke) post(ctx context.Context, idemKey, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/v1/payments", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Idempotency-Key", idemKey)
	req.Header.Set("Content-Type", "application/json")
	return s.do(req)
}

func (s smoke) get(ctx context.Context, id string) (payment, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/v1/payments/"+id, nil)
	if err != nil {
		return payment{}, err
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, body, err := s.do(req)
	if err != nil {
		return payment{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return payment{}, fmt.Errorf("GET /v1/payments/%s: got %s, want 200: %s", id, resp.Status, body)
	}
	var p payment
	if err := json.Unmarshal(body, &p); err != nil {
		return payment{}, fmt.Errorf("GET /v1/payments/%s: %w", id, err)
	}
	return p, nil
}

// do sends req and reads the whole body (at most 1 MiB).
func (s smoke) do(req *http.Request) (*http.Response, []byte, error) {
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: read body: %w", req.Method, req.URL.Path, err)
	}
	return resp, body, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
