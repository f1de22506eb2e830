// Package orders is a small service that adopts oncepay's boundary: POST
// /orders runs at most once per Idempotency-Key (the idemhttp middleware on
// Redis), and a Postgres unique constraint on (tenant, key) is the durable
// backstop that answers for a key after Redis lost it.
package orders

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/oncepay/oncepay/pkg/idem/idemhttp"
)

// Schema is the orders table; the unique constraint is the backstop.
const Schema = `CREATE TABLE IF NOT EXISTS example_orders (
	id          bigserial PRIMARY KEY,
	tenant      text NOT NULL,
	idem_key    text NOT NULL,
	fingerprint text NOT NULL,
	answer      bytea NOT NULL, -- the first answer, idem.Response
	UNIQUE (tenant, idem_key))`

// Retention is how long Redis keeps a key; the table answers for longer.
const Retention = 24 * time.Hour

// NewHandler returns the service's routes on db and store.
func NewHandler(db *pgxpool.Pool, store *idem.Store) http.Handler {
	boundary := idemhttp.New(idemhttp.Config{
		Boundary:  idemhttp.Store(store),
		Scope:     func(r *http.Request) (string, error) { return tenant(r), nil },
		Retention: Retention,
		Backstop: func(ctx context.Context, r *http.Request, k idem.Key, fp string) (idem.Response, bool, error) {
			held, answer, err := holder(ctx, db, k)
			if errors.Is(err, pgx.ErrNoRows) {
				return idem.Response{}, false, nil
			}
			return answer, err == nil && held == fp, err
		},
	})
	mux := http.NewServeMux()
	mux.Handle("POST /orders", boundary(create(db)))
	return mux
}

// tenant stands in for authentication: the X-Tenant header, or "demo".
func tenant(r *http.Request) string {
	if t := r.Header.Get("X-Tenant"); t != "" {
		return t
	}
	return "demo"
}

// create inserts the order under the key; a conflict on the key means
// another request holds it (Redis lost the key): its answer decides.
func create(db *pgxpool.Pool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := idemhttp.FromContext(r.Context())
		var order struct {
			Item string `json:"item"`
			Qty  int    `json:"qty"`
		}
		if err := json.NewDecoder(r.Body).Decode(&order); err != nil || order.Item == "" || order.Qty < 1 {
			http.Error(w, `send {"item": "...", "qty": n}`, http.StatusBadRequest) // 4xx: stored
			return
		}
		body, _ := json.Marshal(map[string]any{"item": order.Item, "qty": order.Qty, "status": "accepted"})
		answer := idem.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
		stored, _ := answer.MarshalBinary()
		tag, err := db.Exec(r.Context(), `INSERT INTO example_orders (tenant, idem_key, fingerprint, answer)
			VALUES ($1, $2, $3, $4) ON CONFLICT (tenant, idem_key) DO NOTHING`,
			req.Key.Merchant(), req.Key.ID(), req.Fingerprint, stored)
		if err != nil {
			http.Error(w, "database unavailable", http.StatusServiceUnavailable) // 5xx: released
			return
		}
		if tag.RowsAffected() == 0 { // the key's row was there before
			held, first, err := holder(r.Context(), db, req.Key)
			switch {
			case err != nil:
				http.Error(w, "database unavailable", http.StatusServiceUnavailable)
				return
			case held != req.Fingerprint:
				idemhttp.CompleteAs(w, held, first) // repair the stage to the holder
				http.Error(w, "idempotency key reused with another request", http.StatusUnprocessableEntity)
				return
			}
			answer = first
			w.Header().Set(idemhttp.HeaderReplayed, "true")
		}
		for name, v := range answer.Header {
			w.Header()[name] = v
		}
		w.WriteHeader(answer.Status)
		_, _ = w.Write(answer.Body)
	})
}

// holder returns the fingerprint and first answer of the key's order.
func holder(ctx context.Context, db *pgxpool.Pool, k idem.Key) (string, idem.Response, error) {
	var fp string
	var stored []byte
	var answer idem.Response
	err := db.QueryRow(ctx, `SELECT fingerprint, answer FROM example_orders WHERE tenant = $1 AND idem_key = $2`,
		k.Merchant(), k.ID()).Scan(&fp, &stored)
	if err == nil {
		err = answer.UnmarshalBinary(stored)
	}
	return fp, answer, err
}
