package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrNoRecord is returned by Lookup when no call was ever recorded under a key.
var ErrNoRecord = errors.New("ledger: no idempotency record for this key")

// Stored is the answer the psp stored under an idempotency key: the one it
// gave (or, after fail_after, would have given) the first call, and that it
// replays to every later call with the same request.
type Stored struct {
	HTTPStatus int    // 201 charged, 402 declined (a rejection is not looked up)
	Body       []byte // the exact answer: the charge or decline as JSON
	ChargeID   string
}

// Lookup returns the charge or decline stored under key, or ErrNoRecord
// (also for a stored rejection: nothing was charged or declined; a POST
// with the key replays the rejection). A charge still being committed
// under key (its transaction open) is not seen: the caller gets
// ErrNoRecord and may ask again. It records no call.
func (s *Store) Lookup(ctx context.Context, key string) (Stored, error) {
	var st Stored
	err := s.pool.QueryRow(ctx, `SELECT http_status, body, charge_id FROM psp_idempotency WHERE idempotency_key = $1 AND http_status IN (201, 402)`, key).
		Scan(&st.HTTPStatus, &st.Body, &st.ChargeID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Stored{}, fmt.Errorf("key %q: %w", key, ErrNoRecord)
	}
	if err != nil {
		return Stored{}, fmt.Errorf("look up key %q: %w", key, err)
	}
	return st, nil
}
