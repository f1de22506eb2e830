package idem

import (
	"crypto/sha256"
	"encoding/hex"
)

// Fingerprint returns the hex SHA-256 of method, path and the canonical form
// of the JSON body (see CanonicalJSON). Key order and insignificant white
// space do not change it; any changed value does. An empty body is allowed.
// It fails only when body is not valid JSON.
func Fingerprint(method, path string, body []byte) (string, error) {
	var b [512]byte // the hashed text of a small request, on the stack
	buf := append(append(append(append(b[:0], method...), '\n'), path...), '\n')
	buf, err := appendCanonical(buf, body)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:]), nil
}

// CanonicalJSON re-encodes one JSON value with object keys sorted, no
// insignificant white space and strings in a single escaping. Numbers keep
// their literal text (1 and 1.0 differ). Empty or all-white-space input gives
// an empty result; trailing data after the value is an error.
func CanonicalJSON(body []byte) ([]byte, error) {
	return appendCanonical(nil, body)
}
