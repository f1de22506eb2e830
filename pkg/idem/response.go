package idem

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Response is a stored HTTP answer, replayed byte for byte for a completed
// stage. Header should hold only the headers that are part of the answer
// (e.g. Content-Type, Location), never per-request ones.
type Response struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body"`
}

// MarshalBinary encodes r for Lease.Complete.
func (r Response) MarshalBinary() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("idem: encode response: %w", err)
	}
	return b, nil
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
