package idem

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Fingerprint returns the hex SHA-256 of method, path and the canonical form
// of the JSON body (see CanonicalJSON). Key order and insignificant white
// space do not change it; any changed value does. An empty body is allowed.
// It fails only when body is not valid JSON.
func Fingerprint(method, path string, body []byte) (string, error) {
	canon, err := CanonicalJSON(body)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{'\n'})
	h.Write([]byte(path))
	h.Write([]byte{'\n'})
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CanonicalJSON re-encodes one JSON value with object keys sorted, no
// insignificant white space and strings in a single escaping. Numbers keep
// their literal text (1 and 1.0 differ). Empty or all-white-space input gives
// an empty result; trailing data after the value is an error.
func CanonicalJSON(body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("idem: fingerprint: body is not JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("idem: fingerprint: trailing data after the JSON value")
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, fmt.Errorf("idem: fingerprint: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte{'\n'}), nil
}
