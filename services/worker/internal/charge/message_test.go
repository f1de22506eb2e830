package charge

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/pkg/message"

	"github.com/oncepay/oncepay/services/worker/internal/consumer"
)

const goodBody = `{"payment_id":"pay_1","merchant_id":"m_1","idempotency_key":"k-1","amount":1500,"currency":"EUR","customer_id":"cus_1"}`

func goodMessage() consumer.Message {
	return consumer.Message{
		ID:      "pay_1",
		Headers: amqp.Table{"x-idempotency-key": "k-1", "x-merchant-id": "m_1"},
		Body:    []byte(goodBody),
	}
}

func TestDecode(t *testing.T) {
	got, err := Decode(goodMessage())
	if err != nil {
		t.Fatal(err)
	}
	want := Initiated{PaymentInitiated: message.PaymentInitiated{PaymentID: "pay_1", MerchantID: "m_1", IdempotencyKey: "k-1", Amount: 1500, Currency: "EUR", CustomerID: "cus_1"}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Initiated{})); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
	if got.Key().String() != "idem:v1:{m_1:k-1}" {
		t.Errorf("key = %s", got.Key())
	}
	if PSPKey(got) != "m_1:k-1" {
		t.Errorf("psp key = %s", PSPKey(got))
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name   string
		modify func(m *consumer.Message)
		want   []string // substrings of the error
	}{
		{"not JSON", func(m *consumer.Message) { m.Body = []byte("{oops") }, []string{"body"}},
		{"trailing data", func(m *consumer.Message) { m.Body = []byte(goodBody + `{}`) }, []string{"after the JSON"}},
		{"fractional amount", func(m *consumer.Message) { m.Body = []byte(strings.Replace(goodBody, "1500", "15.5", 1)) }, []string{"body"}},
		{"everything missing", func(m *consumer.Message) { m.Body = []byte(`{}`) },
			[]string{"payment_id is missing", "merchant_id is missing", "idempotency_key is missing", "customer_id is missing", "amount must be", "currency must be"}},
		{"message id disagrees", func(m *consumer.Message) { m.ID = "pay_2" }, []string{`message id "pay_2" is not payment_id "pay_1"`}},
		{"missing message id", func(m *consumer.Message) { m.ID = "" }, []string{"message id"}},
		{"key header disagrees", func(m *consumer.Message) { m.Headers["x-idempotency-key"] = "k-2" }, []string{"header x-idempotency-key"}},
		{"merchant header missing", func(m *consumer.Message) { delete(m.Headers, "x-merchant-id") }, []string{"header x-merchant-id"}},
		{"bad merchant id", func(m *consumer.Message) {
			m.Body = []byte(strings.Replace(goodBody, `"m_1"`, `"m 1"`, 1))
			m.Headers["x-merchant-id"] = "m 1"
		}, []string{"merchant id"}},
		{"lower-case currency", func(m *consumer.Message) { m.Body = []byte(strings.Replace(goodBody, "EUR", "eur", 1)) }, []string{"currency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := goodMessage()
			tt.modify(&m)
			_, err := Decode(m)
			if !errors.Is(err, ErrUndecodable) {
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

func TestFingerprint(t *testing.T) {
	base := Initiated{PaymentInitiated: message.PaymentInitiated{PaymentID: "pay_1", Amount: 100, Currency: "EUR", MerchantID: "m", IdempotencyKey: "k", CustomerID: "c"}}
	same := base
	same.CustomerID = "other" // not part of the fingerprint
	if Fingerprint(base) != Fingerprint(same) {
		t.Error("fingerprint depends on customer_id")
	}
	for name, m := range map[string]Initiated{
		"payment id": {PaymentInitiated: message.PaymentInitiated{PaymentID: "pay_2", Amount: 100, Currency: "EUR"}},
		"amount":     {PaymentInitiated: message.PaymentInitiated{PaymentID: "pay_1", Amount: 101, Currency: "EUR"}},
		"currency":   {PaymentInitiated: message.PaymentInitiated{PaymentID: "pay_1", Amount: 100, Currency: "USD"}},
	} {
		if Fingerprint(m) == Fingerprint(base) {
			t.Errorf("fingerprint ignores %s", name)
		}
	}
	if len(Fingerprint(base)) != 64 {
		t.Errorf("fingerprint %q is not hex SHA-256", Fingerprint(base))
	}
}
