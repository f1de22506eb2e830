package httpapi

import (
	"context"
	"net/http"
	"strings"
)

type merchantKey struct{}

// merchantFrom returns the authenticated merchant of the request ("" on
// routes without authentication).
func merchantFrom(ctx context.Context) string {
	m, _ := ctx.Value(merchantKey{}).(string)
	return m
}

// authenticate lets through requests that carry "Authorization: Bearer
// <api key>" with a configured key, and answers every other one with 401
// before anything else is looked at. The key itself is never logged.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		token, ok := bearerToken(header)
		merchant := ""
		if ok {
			merchant, ok = s.keys.Lookup(token)
		}
		if !ok {
			detail := "the API key is not valid"
			if header == "" {
				detail = "send your API key as Authorization: Bearer <api key>"
			}
			s.writeError(w, r, newProblem(http.StatusUnauthorized, "unauthorized", "Unauthorized", detail).
				with("WWW-Authenticate", `Bearer realm="oncepay"`))
			return
		}
		infoFrom(r.Context()).merchant = merchant
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), merchantKey{}, merchant)))
	})
}

// bearerToken returns the token of an RFC 6750 "Bearer <token>" header; the
// scheme is case-insensitive.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
