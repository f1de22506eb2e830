package idem

import (
	"fmt"
	"strings"
)

// MaxKeyLen is the longest idempotency key accepted, in bytes.
const MaxKeyLen = 255

// ParseKey validates the value of an Idempotency-Key header and returns the
// key. A key is 1–255 visible ASCII characters (0x21–0x7E). The quoted
// structured-field form ("abc", RFC 8941 sf-string, with \" and \\ escapes)
// is accepted and unquoted; the unquoted key must satisfy the same rule.
// Errors wrap ErrInvalidKey and say what is wrong.
func ParseKey(header string) (string, error) {
	key := header
	if len(header) >= 2 && header[0] == '"' && header[len(header)-1] == '"' {
		var err error
		if key, err = unquote(header[1 : len(header)-1]); err != nil {
			return "", err
		}
	}
	switch {
	case key == "":
		return "", fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return "", fmt.Errorf("%w: %d bytes, at most %d allowed", ErrInvalidKey, len(key), MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return "", fmt.Errorf("%w: byte %#02x at offset %d is not visible ASCII", ErrInvalidKey, c, i)
		}
	}
	return key, nil
}

// unquote undoes the sf-string escapes \" and \\.
func unquote(s string) (string, error) {
	if !strings.ContainsAny(s, `\"`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return "", fmt.Errorf("%w: unescaped quote inside quoted key", ErrInvalidKey)
		case '\\':
			if i+1 == len(s) || (s[i+1] != '"' && s[i+1] != '\\') {
				return "", fmt.Errorf("%w: bad escape in quoted key", ErrInvalidKey)
			}
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Key is an idempotency key scoped to one merchant: two merchants using the
// same key string get two independent operations. The zero Key is invalid.
type Key struct {
	merchant string
	key      string
}

// NewKey scopes key to merchant. The merchant id is 1–64 characters of
// [A-Za-z0-9_-]; the key follows ParseKey's rule (already unquoted). Errors
// wrap ErrInvalidKey.
func NewKey(merchant, key string) (Key, error) {
	if merchant == "" || len(merchant) > 64 {
		return Key{}, fmt.Errorf("%w: merchant id must be 1-64 characters", ErrInvalidKey)
	}
	for _, c := range merchant {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return Key{}, fmt.Errorf("%w: merchant id %q has a character outside [A-Za-z0-9_-]", ErrInvalidKey, merchant)
		}
	}
	if _, err := ParseKey(key); err != nil || (len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"') {
		if err == nil {
			err = fmt.Errorf("%w: key is still quoted; use ParseKey first", ErrInvalidKey)
		}
		return Key{}, err
	}
	return Key{merchant: merchant, key: key}, nil
}

// Merchant returns the merchant id.
func (k Key) Merchant() string { return k.merchant }

// ID returns the idempotency key as the client sent it (unquoted).
func (k Key) ID() string { return k.key }

// String returns the Redis key of the operation, idem:v1:{<merchant>:<key>}.
// The braces are a Redis Cluster hash tag.
func (k Key) String() string { return "idem:v1:{" + k.merchant + ":" + k.key + "}" }
