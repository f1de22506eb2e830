package idem

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// responseCases are answers whose encoding must be json.Marshal's.
var responseCases = []Response{
	{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"ord_1"}`)},
	{Status: 200},
	{Status: 204, Header: http.Header{}, Body: []byte{}},
	{Status: 422, Header: http.Header{"X-B": {"1", "2"}, "X-A": nil, "X-C": {}}, Body: []byte{0, 0xff, 0xfe}},
	{Status: 503, Header: http.Header{"Retry-After": {"1"}, "Link": {`<https://x>; rel="a&b"`}}},
	{Status: 400, Header: http.Header{"X-\xff": {"\xc3", "\u2028\u2029", "\x00\x1f\t\n\"\\"}}},
	{Status: -1, Header: http.Header{"": {""}}, Body: []byte("a")},
}

func TestMarshalBinarySameAsJSON(t *testing.T) {
	t.Parallel()
	for _, r := range responseCases {
		want, _ := json.Marshal(r)
		got, err := r.MarshalBinary()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("MarshalBinary(%+v) = %s, %v; json.Marshal gives %s", r, got, err, want)
		}
	}
}

// FuzzMarshalBinarySame checks MarshalBinary against json.Marshal.
func FuzzMarshalBinarySame(f *testing.F) {
	f.Add(201, "Content-Type", "application/json", "X-A", "<&>", []byte(`{"id":1}`), false)
	f.Add(500, "\xff", "\u2028", "", "", []byte(nil), true)
	f.Fuzz(func(t *testing.T, status int, k1, v1, k2, v2 string, body []byte, nilValues bool) {
		r := Response{Status: status, Header: http.Header{k1: {v1, v2}, k2: {v2}}, Body: body}
		if nilValues {
			r.Header[k2] = nil
		}
		want, _ := json.Marshal(r)
		got, _ := r.MarshalBinary()
		if !bytes.Equal(got, want) {
			t.Fatalf("MarshalBinary(%+v) = %s; json.Marshal gives %s", r, got, want)
		}
	})
}
