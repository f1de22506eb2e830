package httpapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzFieldNameErrors: the direct walk of a valid body gives exactly the
// errors of the walk over json.Decoder's tokens, for any body.
func FuzzFieldNameErrors(f *testing.F) {
	for _, s := range []string{
		`{"amount":100,"currency":"EUR","customer_id":"c","description":"d"}`,
		` { "amount" : 1 , "Amount" : 2 , "amount" : [1,{"x":"}"}] , "x\u0041":null } `,
		`{"a\"b":{"c":[true,false,null,-1.5e3]},"a\"b":"\\"}`,
		"{\"\xff\":1,\"\xff\":2}",
		`{"amount":1,}`, `{"amount":1 "x":2}`, `{"amount":1} trailing`, `[1,2]`, `"s"`, `{}`, ``,
		`{"amount":1,"amount":`, `{"a":1,"a":2,"b"`,
	} {
		f.Add([]byte(s))
	}
	names := jsonNames(&createPaymentRequest{})
	f.Fuzz(func(t *testing.T, body []byte) {
		got := fieldNameErrors(body, names)
		want := fieldNameErrorsTokens(body, names)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("fieldNameErrors(%q) differs from the token walk (-tokens +direct):\n%s", body, diff)
		}
	})
}
