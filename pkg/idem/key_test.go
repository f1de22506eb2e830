package idem

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"plain", "order-42", "order-42", true},
		{"uuid", "3f1c2a9e-1b7d-4c55-9a0e-2f6f0a4f1b2c", "3f1c2a9e-1b7d-4c55-9a0e-2f6f0a4f1b2c", true},
		{"one char", "a", "a", true},
		{"max length", strings.Repeat("k", 255), strings.Repeat("k", 255), true},
		{"quoted", `"abc"`, "abc", true},
		{"quoted with escapes", `"a\"b\\c"`, `a"b\c`, true},
		{"empty", "", "", false},
		{"empty quoted", `""`, "", false},
		{"too long", strings.Repeat("k", 256), "", false},
		{"quoted too long", `"` + strings.Repeat("k", 256) + `"`, "", false},
		{"space", "a b", "", false},
		{"quoted space", `"a b"`, "", false},
		{"tab", "a\tb", "", false},
		{"newline", "a\nb", "", false},
		{"nul", "a\x00b", "", false},
		{"del", "a\x7fb", "", false},
		{"non-ascii", "caf\u00e9", "", false},
		{"lone quote", `"`, `"`, true},
		{"bad escape", `"a\b"`, "", false},
		{"inner quote", `"a"b"`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKey(tt.in)
			if tt.ok && err != nil {
				t.Fatalf("ParseKey(%q) error %v, want %q", tt.in, err, tt.want)
			}
			if !tt.ok {
				if !errors.Is(err, ErrInvalidKey) {
					t.Fatalf("ParseKey(%q) = %q, %v; want ErrInvalidKey", tt.in, got, err)
				}
				return
			}
			if got != tt.want {
				t.Errorf("ParseKey(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNewKeyScopesPerMerchant(t *testing.T) {
	t.Parallel()
	a, err := NewKey("merchant_a", "k-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewKey("merchant_b", "k-1")
	if err != nil {
		t.Fatal(err)
	}
	if a.String() == b.String() {
		t.Fatalf("two merchants share the Redis key %q", a.String())
	}
	if got, want := a.String(), "idem:v1:{merchant_a:k-1}"; got != want {
		t.Errorf("Key.String() = %q, want %q", got, want)
	}
	for _, m := range []string{"", "a:b", "a b", "{x}", strings.Repeat("m", 65)} {
		if _, err := NewKey(m, "k"); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("NewKey(%q, k) error = %v, want ErrInvalidKey", m, err)
		}
	}
	if _, err := NewKey("m", `"quoted"`); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("NewKey with a still-quoted key: error = %v, want ErrInvalidKey", err)
	}
}

// FuzzParseKey checks that every accepted key obeys the rule, and that
// quoting an accepted key round-trips.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"a", `"abc"`, `"a\"b"`, "a b", "", strings.Repeat("x", 300), "\x00", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseKey(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ParseKey(%q) error %v does not wrap ErrInvalidKey", in, err)
			}
			return
		}
		if len(got) == 0 || len(got) > MaxKeyLen {
			t.Fatalf("ParseKey(%q) accepted %d bytes", in, len(got))
		}
		for i := 0; i < len(got); i++ {
			if got[i] < 0x21 || got[i] > 0x7e {
				t.Fatalf("ParseKey(%q) accepted byte %#x", in, got[i])
			}
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(got) + `"`
		if again, err := ParseKey(quoted); err != nil || again != got {
			t.Fatalf("quoted round trip of %q: got %q, %v", got, again, err)
		}
	})
}
