package idemhttp

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime"
	"net/http"
	"strings"

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
	body, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		return "", err
	}
	return fingerprintOf(r, body)
}

// fingerprintOf is Fingerprint of r with its body read.
func fingerprintOf(r *http.Request, body []byte) (string, error) {
	route := r.Pattern
	if route == "" {
		route = r.URL.Path
	}
	if isJSON(r.Header.Get("Content-Type")) {
		return idem.Fingerprint(r.Method, route, body)
	}
	h := sha256.New()
	h.Write([]byte(r.Method + "\n" + route + "\nraw\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// isJSON reports whether the media type of contentType is
// application/json, as mime.ParseMediaType reads it; without parameters
// it needs no parse (and no allocation).
func isJSON(contentType string) bool {
	const want = "application/json"
	if !strings.Contains(contentType, ";") {
		v := strings.TrimSpace(contentType)
		return len(v) == len(want) && strings.EqualFold(v, want)
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == want
}

// maxPresize bounds the buffer allocated for a body from its declared
// length before the bytes arrive: a client that declares a megabyte and
// sends a byte holds no more than this.
const maxPresize = 64 << 10

// presize is the buffer to allocate for a body of declared length size
// (-1: unknown).
func presize(size int64) int {
	if size < 0 {
		return 512 // as io.ReadAll
	}
	return int(min(size, maxPresize))
}

// readBody reads body to its end, or fails with an *http.MaxBytesError
// past MaxBody bytes. size is the declared length (-1: unknown).
func readBody(body io.Reader, size int64) ([]byte, error) {
	if body == nil || body == http.NoBody {
		return nil, nil
	}
	// One read past the limit tells a body of exactly MaxBody bytes from
	// a longer one.
	lr := io.LimitedReader{R: body, N: MaxBody + 1}
	buf := make([]byte, 0, presize(size)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > MaxBody {
			return nil, &http.MaxBytesError{Limit: MaxBody}
		}
		if err == io.EOF { // as io.ReadAll: an EOF that is not wrapped
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
