package charge

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Stage is the boundary stage the worker claims.
const Stage = "charge"

// Fingerprint identifies what the charge stage of a key is for: the hex
// SHA-256 of payment id, amount and currency. The same key reused for a
// different payment gets idem.ErrMismatch from the boundary.
func Fingerprint(m Initiated) string {
	h := sha256.New()
	h.Write([]byte(m.PaymentID))
	h.Write([]byte{'\n'})
	h.Write([]byte(strconv.FormatInt(m.Amount, 10)))
	h.Write([]byte{'\n'})
	h.Write([]byte(m.Currency))
	return hex.EncodeToString(h.Sum(nil))
}

// PSPKey is the Idempotency-Key the worker sends to the psp: the client's
// key scoped by its merchant, <merchant_id>:<idempotency_key>, the same for
// every attempt and every worker.
func PSPKey(m Initiated) string { return m.MerchantID + ":" + m.IdempotencyKey }
