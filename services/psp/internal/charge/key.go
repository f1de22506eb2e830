package charge

import "fmt"

// MaxKeyLen is the longest Idempotency-Key accepted, in bytes.
const MaxKeyLen = 512

// KeyProblem returns why key is not a valid Idempotency-Key, or "" if it is:
// a key is 1..512 visible ASCII characters (0x21-0x7E).
func KeyProblem(key string) string {
	switch {
	case key == "":
		return "is required"
	case len(key) > MaxKeyLen:
		return fmt.Sprintf("must be at most %d characters", MaxKeyLen)
	}
	for i := range len(key) {
		if key[i] < 0x21 || key[i] > 0x7e {
			return "must contain only visible ASCII characters (0x21-0x7E)"
		}
	}
	return ""
}
