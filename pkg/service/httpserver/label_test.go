package httpserver

import "testing"

func TestMethod(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"GET": "GET", "POST": "POST", "PATCH": "PATCH", "TRACE": "TRACE", "CONNECT": "CONNECT",
		"get": MethodOther, "PROPFIND": MethodOther, "": MethodOther, "G\x00T": MethodOther,
	} {
		if got := Method(in); got != want {
			t.Errorf("Method(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRoute(t *testing.T) {
	t.Parallel()
	if got := Route(""); got != "unmatched" {
		t.Errorf(`Route("") = %q, want "unmatched"`, got)
	}
	if got := Route("/v1/payments/{id}"); got != "/v1/payments/{id}" {
		t.Errorf("Route(pattern) = %q, want the pattern", got)
	}
}
