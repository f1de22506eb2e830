package charge

import (
	"encoding/json"
	"fmt"

	"github.com/oncepay/oncepay/services/worker/internal/payments"
)

// Result is what the charge stage stores in the boundary when it completes:
// the payment's terminal outcome.
type Result struct {
	PaymentID     string `json:"payment_id"`
	Status        string `json:"status"`
	PSPChargeID   string `json:"psp_charge_id,omitempty"`
	FailureReason string `json:"failure_reason,omitempty"`
}

func resultOf(id string, o payments.Outcome) []byte {
	b, err := json.Marshal(Result{PaymentID: id, Status: o.Status, PSPChargeID: o.PSPChargeID, FailureReason: o.FailureReason})
	if err != nil {
		panic(fmt.Sprintf("charge: marshal result: %v", err)) // cannot happen: strings only
	}
	return b
}
