package idem

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// Response is a stored HTTP answer, replayed byte for byte for a completed
// stage. Header should hold only the headers that are part of the answer
// (e.g. Content-Type, Location), never per-request ones.
type Response struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body"`
}

// MarshalBinary encodes r for Lease.Complete: the JSON that json.Marshal
// gives (status, header unless empty, body in base64), written without
// reflection. It does not fail.
func (r Response) MarshalBinary() ([]byte, error) {
	n := 48 + base64.StdEncoding.EncodedLen(len(r.Body))
	var sorted [8]string // the header's names, on the stack when few
	names := sorted[:0]
	for name, values := range r.Header {
		names = append(names, name)
		n += len(name) + 6
		for _, v := range values {
			n += len(v) + 3
		}
	}
	b := make([]byte, 0, n)
	b = append(b, `{"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	if len(r.Header) > 0 {
		b = append(b, `,"header":{`...)
		slices.Sort(names)
		for i, name := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, name, true)
			b = append(b, ':')
			values := r.Header[name]
			if values == nil {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '[')
			for j, v := range values {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, v, true)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `,"body":`...)
	if r.Body == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, r.Body)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// UnmarshalBinary decodes what MarshalBinary produced (a Claim's Result).
func (r *Response) UnmarshalBinary(b []byte) error {
	if err := json.Unmarshal(b, r); err != nil {
		return fmt.Errorf("idem: decode response: %w", err)
	}
	if r.Status < 100 || r.Status > 599 {
		return fmt.Errorf("idem: decode response: status %d out of range", r.Status)
	}
	return nil
}
