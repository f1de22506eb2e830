package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
)

// requireToken answers 401 (problem+json, with WWW-Authenticate) to every
// request that does not carry Authorization: Bearer <token>. The tokens are
// compared in constant time, over their SHA-256 digests so that not even
// the token's length leaks through timing.
func requireToken(log *slog.Logger, token string) func(http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, ok := bearer(r.Header.Get("Authorization"))
			sum := sha256.Sum256([]byte(got))
			if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="psp-admin"`)
				writeError(w, r, log, unauthorized())
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// bearer returns the credentials of an Authorization header of the Bearer
// scheme (case-insensitive, RFC 9110), and false for any other header.
func bearer(h string) (string, bool) {
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || cred == "" {
		return "", false
	}
	return cred, true
}
