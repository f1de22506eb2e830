package charge

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/oncepay/oncepay/services/psp/pspclient"
)

// MaxTextLen is the longest customer_id or reference accepted, in
// characters (Unicode code points), as providers count them.
const MaxTextLen = pspclient.MaxTextLen

// Request is the body of POST /v1/charges.
type Request struct {
	Amount     int64  `json:"amount"`      // minor units, > 0
	Currency   string `json:"currency"`    // ISO 4217 style: three upper-case letters
	CustomerID string `json:"customer_id"` // 1..255 characters, no control characters
	Reference  string `json:"reference"`   // the caller's payment id; 1..255 characters, no control characters
}

// Valid returns one problem per invalid field, keyed by the JSON field name;
// an empty map means r is valid. The rules are pspclient.ChargeRequest.Valid,
// so callers can check what they will send.
func (r Request) Valid() map[string]string { return pspclient.ChargeRequest(r).Valid() }

// Fingerprint identifies the payload for idempotency: two requests with the
// same key and the same fingerprint are the same charge; a different
// fingerprint under one key is a mismatch.
func (r Request) Fingerprint() []byte {
	// encoding/json writes struct fields in declaration order, so this is canonical.
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("charge: marshal request: %v", err)) // cannot happen: only strings and ints
	}
	sum := sha256.Sum256(b)
	return sum[:]
}
