package charge

import (
	"encoding/json"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/services/worker/internal/consumer"
	"github.com/oncepay/oncepay/services/worker/internal/payments"
)

// MessageOf returns the payment.initiated message of p as the api publishes
// it (body, message id and headers), for charging p without a delivery.
// Decode accepts it when p is a valid payment.
func MessageOf(p payments.Payment) consumer.Message {
	body, err := json.Marshal(Initiated{
		PaymentID: p.ID, MerchantID: p.MerchantID, IdempotencyKey: p.IdempotencyKey,
		Amount: p.Amount, Currency: p.Currency, CustomerID: p.CustomerID,
	})
	if err != nil {
		panic(fmt.Sprintf("charge: marshal message: %v", err)) // cannot happen: strings and an int
	}
	return consumer.Message{
		ID:      p.ID,
		Headers: amqp.Table{"x-idempotency-key": p.IdempotencyKey, "x-merchant-id": p.MerchantID},
		Body:    body,
		Attempt: 1,
	}
}

// StageResult is what the charge stage of payment id stores when it
// completes with outcome o (a Result as JSON).
func StageResult(id string, o payments.Outcome) []byte { return resultOf(id, o) }
