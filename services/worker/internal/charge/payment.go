package charge

import (
	"fmt"

	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/services/worker/internal/consumer"
	"github.com/oncepay/oncepay/services/worker/internal/payments"
)

// MessageOf returns the payment.initiated message of p as the api publishes
// it (message.PaymentInitiated.Encode: body, message id and headers), for
// charging p without a delivery. Decode accepts it when p is a valid
// payment.
func MessageOf(p payments.Payment) consumer.Message {
	pub, err := message.PaymentInitiated{
		PaymentID: p.ID, MerchantID: p.MerchantID, IdempotencyKey: p.IdempotencyKey,
		Amount: p.Amount, Currency: p.Currency, CustomerID: p.CustomerID,
	}.Encode()
	if err != nil {
		panic(fmt.Sprintf("charge: encode message: %v", err)) // cannot happen: strings and an int
	}
	return consumer.Message{ID: pub.MessageId, Headers: pub.Headers, Body: pub.Body, Attempt: 1}
}

// StageResult is what the charge stage of payment id stores when it
// completes with outcome o (a Result as JSON).
func StageResult(id string, o payments.Outcome) []byte { return resultOf(id, o) }
