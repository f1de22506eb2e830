// Package httpserver is what every oncepay HTTP listener shares: one
// http.Server shape with bounded timeouts and header size (New), and the
// bounded label values its metrics may take from a request (Method).
package httpserver

import "net/http"

// MethodOther is the Method label of every method not in the fixed set.
const MethodOther = "other"

// knownMethods are the request methods net/http names (RFC 9110 and PATCH).
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true,
	http.MethodOptions: true, http.MethodTrace: true,
}

// Method returns method if it is one of the nine methods net/http names
// (compared case-sensitively, as methods are), else MethodOther. A metric
// label taken from a request must come from a fixed set, or any client can
// create series without bound; use Method for the method label.
func Method(method string) string {
	if knownMethods[method] {
		return method
	}
	return MethodOther
}

// Route returns pattern, the route pattern the router matched, or
// "unmatched" when it matched none. A route label must never be the
// request's path.
func Route(pattern string) string {
	if pattern == "" {
		return "unmatched"
	}
	return pattern
}
