package auth_test

import (
	"testing"

	"github.com/oncepay/oncepay/services/api/internal/auth"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	ring := auth.NewKeyring(map[string]string{
		"merchant_a": "sk_test_merchant_a_0123456789",
		"merchant_b": "sk_test_merchant_b_0123456789",
		"merchant_c": "sk_test_merchant_c_0123456789",
	})
	tests := []struct {
		name         string
		key          string
		wantMerchant string
		wantOK       bool
	}{
		{"first merchant", "sk_test_merchant_a_0123456789", "merchant_a", true},
		{"middle merchant", "sk_test_merchant_b_0123456789", "merchant_b", true},
		{"last merchant", "sk_test_merchant_c_0123456789", "merchant_c", true},
		{"prefix of a key", "sk_test_merchant_a_012345678", "", false},
		{"key plus a suffix", "sk_test_merchant_a_0123456789x", "", false},
		{"empty", "", "", false},
		{"unknown", "sk_test_nobody_000000000000", "", false},
		{"case differs", "SK_TEST_MERCHANT_A_0123456789", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ring.Lookup(tt.key)
			if got != tt.wantMerchant || ok != tt.wantOK {
				t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.key, got, ok, tt.wantMerchant, tt.wantOK)
			}
		})
	}
}

func TestLookupEmptyKeyring(t *testing.T) {
	t.Parallel()
	if got, ok := auth.NewKeyring(nil).Lookup("anything-at-all-16"); ok {
		t.Errorf("empty keyring found merchant %q", got)
	}
}
