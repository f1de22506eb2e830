package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// paymentIn and paymentOut have the shape of the api's request and answer.
type paymentIn struct {
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	CustomerID  string `json:"customer_id"`
	Description string `json:"description"`
}

type paymentOut struct {
	ID         string    `json:"id"`
	Status     string    `json:"status"`
	Amount     int64     `json:"amount"`
	Currency   string    `json:"currency"`
	CustomerID string    `json:"customer_id"`
	CreatedAt  time.Time `json:"created_at"`
}

// trivial is the bare HTTP work of one payment: decode the JSON body,
// encode a JSON answer. No Redis, no Postgres, no RabbitMQ.
func trivial(w http.ResponseWriter, r *http.Request) {
	var in paymentIn
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(paymentOut{ID: "pay_" + r.Header.Get("Idempotency-Key"), Status: "pending",
		Amount: in.Amount, Currency: in.Currency, CustomerID: in.CustomerID, CreatedAt: time.Now().UTC()})
}

// serveHTTP serves the trivial handler on addr until ctx ends.
func serveHTTP(ctx context.Context, addr string, stderr io.Writer) error {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/payments", trivial)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stderr, "benchstage http: listening on %s\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
