package pspclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/oncepay/oncepay/services/psp/pspclient"
)

// A stand-in that answers like the psp, so the example runs without a database.
func examplePSP() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Idempotency-Key") == "pay_2:charge" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, `{"type":"urn:oncepay:psp:problem:simulated-outage","title":"Service unavailable","status":503}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintln(w, `{"id":"ch_1","status":"succeeded","amount":1250,"currency":"EUR","customer_id":"cus_1","reference":"pay_1","created_at":"2026-01-02T03:04:05.123456Z"}`)
	}))
}

func ExampleClient_Charge() {
	psp := examplePSP()
	defer psp.Close()
	client := pspclient.New(psp.URL, nil)
	ctx := context.Background()

	for _, paymentID := range []string{"pay_1", "pay_2"} {
		ch, err := client.Charge(ctx, paymentID+":charge", pspclient.ChargeRequest{
			Amount: 1250, Currency: "EUR", CustomerID: "cus_1", Reference: paymentID,
		})
		switch {
		case errors.Is(err, pspclient.ErrTransient):
			fmt.Println(paymentID, "outcome unknown: retry later with the same key")
		case err != nil:
			fmt.Println(paymentID, "rejected:", err)
		case ch.Status == pspclient.StatusDeclined:
			fmt.Println(paymentID, "declined:", ch.DeclineCode)
		default:
			fmt.Println(paymentID, "charged:", ch.ID, ch.Amount, ch.Currency)
		}
	}
	// Output:
	// pay_1 charged: ch_1 1250 EUR
	// pay_2 outcome unknown: retry later with the same key
}
