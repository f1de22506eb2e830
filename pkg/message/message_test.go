package message_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/pkg/message"
)

var good = message.PaymentInitiated{PaymentID: "pay_1", MerchantID: "m_1", IdempotencyKey: "k-1",
	Amount: 1500, Currency: "EUR", CustomerID: "cus_1"}

func TestRoundTrip(t *testing.T) {
	p, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if p.MessageId != "pay_1" || p.DeliveryMode != amqp.Persistent || p.ContentType != "application/json" {
		t.Errorf("envelope: id %q, mode %d, type %q", p.MessageId, p.DeliveryMode, p.ContentType)
	}
	want := amqp.Table{"x-idempotency-key": "k-1", "x-merchant-id": "m_1"}
	if diff := cmp.Diff(want, p.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	got, err := message.Decode(p.MessageId, p.Headers, p.Body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(good, got); diff != "" {
		t.Errorf("Decode(Encode(m)) (-want +got):\n%s", diff)
	}
	wrapped := message.Wrap(good.PaymentID, good.MerchantID, good.IdempotencyKey, p.Body)
	if diff := cmp.Diff(p, wrapped); diff != "" {
		t.Errorf("Wrap of the encoded body differs from Encode (-Encode +Wrap):\n%s", diff)
	}
}

func TestDecodeRejects(t *testing.T) {
	const body = `{"payment_id":"pay_1","merchant_id":"m_1","idempotency_key":"k-1","amount":1500,"currency":"EUR","customer_id":"cus_1"}`
	type msg struct {
		id      string
		headers amqp.Table
		body    string
	}
	tests := []struct {
		name   string
		modify func(m *msg)
		want   []string // substrings of the error
	}{
		{"not JSON", func(m *msg) { m.body = "{oops" }, []string{"body"}},
		{"trailing data", func(m *msg) { m.body += `{}` }, []string{"after the JSON"}},
		{"fractional amount", func(m *msg) { m.body = strings.Replace(m.body, "1500", "15.5", 1) }, []string{"body"}},
		{"everything missing", func(m *msg) { m.body = `{}` },
			[]string{"payment_id is missing", "merchant_id is missing", "idempotency_key is missing", "customer_id is missing", "amount must be", "currency must be"}},
		{"message id disagrees", func(m *msg) { m.id = "pay_2" }, []string{`message id "pay_2" is not payment_id "pay_1"`}},
		{"missing message id", func(m *msg) { m.id = "" }, []string{"message id"}},
		{"key header disagrees", func(m *msg) { m.headers["x-idempotency-key"] = "k-2" }, []string{"header x-idempotency-key"}},
		{"merchant header missing", func(m *msg) { delete(m.headers, "x-merchant-id") }, []string{"header x-merchant-id"}},
		{"lower-case currency", func(m *msg) { m.body = strings.Replace(m.body, "EUR", "eur", 1) }, []string{"currency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := msg{id: "pay_1", headers: amqp.Table{"x-idempotency-key": "k-1", "x-merchant-id": "m_1"}, body: body}
			tt.modify(&m)
			_, err := message.Decode(m.id, m.headers, []byte(m.body))
			if !errors.Is(err, message.ErrUndecodable) {
				t.Fatalf("err = %v, want ErrUndecodable", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}
