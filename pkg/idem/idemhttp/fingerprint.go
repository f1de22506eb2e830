package idemhttp

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime"
	"net/http"

	"github.com/oncepay/oncepay/pkg/idem"
)

// MaxBody is the largest body Fingerprint reads (1 MiB); a larger one is
// answered 413.
const MaxBody = 1 << 20

// Fingerprint is the default Config.Fingerprint: the SHA-256 of the
// method, the route pattern (r.Pattern as http.ServeMux sets it; the path
// when it is empty) and the body, canonical when it is JSON (key order and
// white space do not count, see idem.CanonicalJSON) and byte for byte
// otherwise. A body over MaxBody is an *http.MaxBytesError; a body
// declared JSON that is not is an error wrapping the parse error.
func Fingerprint(r *http.Request) (string, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
	if err != nil {
		return "", err
	}
	route := r.Pattern
	if route == "" {
		route = r.URL.Path
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/json" {
		return idem.Fingerprint(r.Method, route, body)
	}
	h := sha256.New()
	h.Write([]byte(r.Method + "\n" + route + "\nraw\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)), nil
}
