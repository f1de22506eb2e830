package httpapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/oncepay/oncepay/pkg/message"
	"github.com/oncepay/oncepay/services/psp/pspclient"

	"github.com/oncepay/oncepay/services/api/internal/payments"
)

// forwarded is the psp charge the worker sends for the payment the api
// creates from req: through the payment.initiated message (pkg/message,
// encoded as the outbox does, decoded as the worker does) and the worker's
// mapping of a message to a charge (services/worker internal/charge).
func forwarded(t testing.TB, req createPaymentRequest) pspclient.ChargeRequest {
	t.Helper()
	id, err := payments.NewID()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := message.PaymentInitiated{PaymentID: id, MerchantID: "merchant_a", IdempotencyKey: "key-1",
		Amount: *req.Amount, Currency: *req.Currency, CustomerID: *req.CustomerID}.Encode()
	if err != nil {
		t.Fatalf("encode the message: %v", err)
	}
	m, err := message.Decode(pub.MessageId, pub.Headers, pub.Body)
	if err != nil {
		t.Fatalf("the worker cannot decode the message of an accepted request: %v", err)
	}
	return pspclient.ChargeRequest{Amount: m.Amount, Currency: m.Currency, CustomerID: m.CustomerID, Reference: m.PaymentID}
}

// agree checks the property for one body: if the api accepts it, the psp
// accepts what the worker forwards. It reports whether the api accepted.
func agree(t *testing.T, body string) bool {
	t.Helper()
	req, err := decodeBody(t, body)
	if err != nil || len(req.validate()) > 0 {
		return false
	}
	if problems := forwarded(t, req).Valid(); len(problems) > 0 {
		t.Errorf("the api accepts %s, the psp rejects the charge: %v", body, problems)
	}
	return true
}

// Every request body the api accepts becomes a charge the psp accepts, so
// an accepted payment can always be charged (or declined). Bodies are
// drawn with lengths at and around every limit, from characters of one to
// four bytes and control characters.
func TestEveryAcceptedPaymentIsAcceptedByThePSP(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := [][]rune{
		[]rune("abcXYZ019_-:. "),     // one byte
		[]rune("éßñЖж"),              // two bytes
		[]rune("€中文한"),               // three bytes
		[]rune("𝄞😀🀄𐍈"),               // four bytes
		{'\x00', '\n', '\x7f', 0x85}, // control characters
	}
	str := func(limit int) string {
		n := rng.IntN(limit + 3)
		if rng.IntN(2) == 0 { // at and around the limit
			n = max(0, limit-1+rng.IntN(3))
		}
		one, mixed := alphabets[rng.IntN(len(alphabets)-1)], rng.IntN(2) == 0 // half the strings use one alphabet only
		var b strings.Builder
		for range n {
			a := one
			if mixed {
				a = alphabets[rng.IntN(len(alphabets)-1)]
			}
			b.WriteRune(a[rng.IntN(len(a))])
		}
		if rng.IntN(10) == 0 { // one string in ten gets a control character
			c := alphabets[len(alphabets)-1]
			b.WriteRune(c[rng.IntN(len(c))])
		}
		return b.String()
	}
	amounts := []int64{-1, 0, 1, 402, MaxAmount, MaxAmount + 1}
	var accepted, longest int
	for range 20_000 {
		body := map[string]any{
			"amount":      amounts[rng.IntN(len(amounts))],
			"currency":    []string{"EUR", "JPY", "eur", "EURO"}[rng.IntN(4)],
			"customer_id": str(maxCustomerIDLen),
		}
		if rng.IntN(2) == 0 {
			body["description"] = str(maxDescriptionLen)
		}
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		if agree(t, string(b)) {
			accepted++
			longest = max(longest, len(body["customer_id"].(string)))
		}
	}
	// The draw must have reached what matters: many accepted bodies, and
	// customer ids longer in bytes than the psp's limit in characters.
	if accepted < 2_000 || longest <= 255 {
		t.Errorf("%d bodies accepted, longest customer_id %d bytes; want >= 2000 and > 255", accepted, longest)
	}
	t.Logf("%d of 20000 bodies accepted by the api, longest customer_id %d bytes", accepted, longest)
}

// FuzzValidatorsAgree is the same property over arbitrary bodies:
// go test -fuzz FuzzValidatorsAgree ./internal/httpapi.
func FuzzValidatorsAgree(f *testing.F) {
	for _, customer := range []string{"cus_42", strings.Repeat("𝄞", 64), strings.Repeat("€", 64), strings.Repeat("c", 64)} {
		f.Add(fmt.Sprintf(`{"amount":1250,"currency":"EUR","customer_id":%q}`, customer))
	}
	f.Add(`{"amount":1,"currency":"JPY","customer_id":"\ud834\udd1e","description":"x"}`)
	f.Fuzz(func(t *testing.T, body string) { agree(t, body) })
}
