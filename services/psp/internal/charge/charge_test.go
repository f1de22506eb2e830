package charge

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func valid() Request {
	return Request{Amount: 1250, Currency: "EUR", CustomerID: "cus_1", Reference: "pay_1"}
}

func TestRequestValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*Request)
		want   []string // fields with a problem
	}{
		{"valid", func(*Request) {}, nil},
		{"zero amount", func(r *Request) { r.Amount = 0 }, []string{"amount"}},
		{"negative amount", func(r *Request) { r.Amount = -5 }, []string{"amount"}},
		{"lower-case currency", func(r *Request) { r.Currency = "eur" }, []string{"currency"}},
		{"long currency", func(r *Request) { r.Currency = "EURO" }, []string{"currency"}},
		{"missing customer", func(r *Request) { r.CustomerID = "" }, []string{"customer_id"}},
		{"control char in reference", func(r *Request) { r.Reference = "pay\x001" }, []string{"reference"}},
		{"reference too long", func(r *Request) { r.Reference = strings.Repeat("r", MaxTextLen+1) }, []string{"reference"}},
		{"unicode customer is fine", func(r *Request) { r.CustomerID = "clé-été" }, nil},
		// The limit counts characters: 255 four-byte characters (1,020
		// bytes) pass, 256 do not.
		{"255 four-byte characters", func(r *Request) { r.CustomerID = strings.Repeat("𝄞", MaxTextLen) }, nil},
		{"256 four-byte characters", func(r *Request) { r.CustomerID = strings.Repeat("𝄞", MaxTextLen+1) }, []string{"customer_id"}},
		{"invalid UTF-8", func(r *Request) { r.CustomerID = "cus_\xff" }, []string{"customer_id"}},
		{"everything wrong", func(r *Request) { *r = Request{} }, []string{"amount", "currency", "customer_id", "reference"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valid()
			tt.modify(&r)
			var got []string
			for _, f := range []string{"amount", "currency", "customer_id", "reference"} {
				if _, ok := r.Valid()[f]; ok {
					got = append(got, f)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fields with problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeyProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want bool // valid
	}{
		{"k", true},
		{"order-42:attempt_1/~!", true},
		{strings.Repeat("k", MaxKeyLen), true},
		{"", false},
		{strings.Repeat("k", MaxKeyLen+1), false},
		{"with space", false},
		{"tab\there", false},
		{"nul\x00", false},
		{"del\x7f", false},
		{"é", false},
	}
	for _, tt := range tests {
		if got := KeyProblem(tt.key) == ""; got != tt.want {
			t.Errorf("KeyProblem(%q) valid = %v, want %v (%q)", tt.key, got, tt.want, KeyProblem(tt.key))
		}
	}
}

func TestNewDeclineRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		customer   string
		amount     int64
		wantStatus string
		wantCode   string
	}{
		{"approved", "cus_1", 1000, StatusSucceeded, ""},
		{"customer rule", "decline_me", 1000, StatusDeclined, DeclineCardDeclined},
		{"exact prefix only", "cus_decline", 1000, StatusSucceeded, ""},
		{"amount rule", "cus_1", 402, StatusDeclined, DeclineInsufficientFunds},
		{"customer rule wins", "decline", 402, StatusDeclined, DeclineCardDeclined},
		{"other amounts pass", "cus_1", 4020, StatusSucceeded, ""},
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valid()
			r.CustomerID, r.Amount = tt.customer, tt.amount
			c := New(r, now)
			if c.Status != tt.wantStatus || c.DeclineCode != tt.wantCode {
				t.Errorf("New = %s/%q, want %s/%q", c.Status, c.DeclineCode, tt.wantStatus, tt.wantCode)
			}
			if c.Effective() != (tt.wantStatus == StatusSucceeded) {
				t.Errorf("Effective = %v for status %s", c.Effective(), c.Status)
			}
			if want := now.UTC().Truncate(time.Microsecond); !c.CreatedAt.Equal(want) || c.CreatedAt.Location() != time.UTC {
				t.Errorf("CreatedAt = %v, want %v in UTC", c.CreatedAt, want)
			}
			if !strings.HasPrefix(c.ID, "ch_") || len(c.ID) != 27 {
				t.Errorf("ID = %q, want ch_ and 24 hex digits", c.ID)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	a, b := valid(), valid()
	if !bytes.Equal(a.Fingerprint(), b.Fingerprint()) {
		t.Fatal("equal requests have different fingerprints")
	}
	for _, modify := range []func(*Request){
		func(r *Request) { r.Amount++ },
		func(r *Request) { r.Currency = "USD" },
		func(r *Request) { r.CustomerID += "x" },
		func(r *Request) { r.Reference += "x" },
	} {
		c := valid()
		modify(&c)
		if bytes.Equal(a.Fingerprint(), c.Fingerprint()) {
			t.Errorf("%+v and %+v share a fingerprint", a, c)
		}
	}
}
