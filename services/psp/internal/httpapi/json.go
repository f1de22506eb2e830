package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// maxBody is the largest request body accepted.
const maxBody = 64 << 10

// validator is a decoded body that can check itself: one problem per field,
// keyed by JSON name.
type validator interface {
	Valid() map[string]string
}

// decode reads r's body as a JSON object into a T and validates it.
//
// It returns a *problem (413, 415) when the body cannot be considered at all.
// Otherwise every problem found is returned as a field error, all at once:
// malformed JSON, each unknown field, each field of the wrong type, and each
// problem Valid reports; ok is false when the JSON itself was unusable
// (malformed, unknown or mistyped fields), so v holds only partial data.
func decode[T validator](w http.ResponseWriter, r *http.Request) (v T, errs []fieldError, ok bool, err error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, perr := mime.ParseMediaType(ct)
		if perr != nil || mt != "application/json" {
			return v, nil, false, unsupportedMediaType(ct)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
			return v, nil, false, tooLarge(maxBody)
		}
		return v, nil, false, unreadableBody(err)
	}
	// Decode field by field so that every unknown or mistyped field is reported,
	// not just the first one encoding/json meets.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		detail := "must be a JSON object"
		if _, syntax := errors.AsType[*json.SyntaxError](err); syntax {
			detail = jsonDetail(err)
		}
		return v, []fieldError{{In: "body", Detail: detail}}, false, nil
	}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		one, _ := json.Marshal(map[string]json.RawMessage{name: raw[name]})
		dec := json.NewDecoder(bytes.NewReader(one))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			errs = append(errs, fieldError{Field: name, In: "body", Detail: jsonDetail(err)})
		}
	}
	ok = len(errs) == 0
	problems := v.Valid()
	for _, name := range slices.Sorted(maps.Keys(problems)) {
		if !slices.ContainsFunc(errs, func(e fieldError) bool { return e.Field == name }) {
			errs = append(errs, fieldError{Field: name, In: "body", Detail: problems[name]})
		}
	}
	return v, errs, ok, nil
}

// jsonDetail turns an encoding/json error into a short sentence for a caller.
func jsonDetail(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return "must be an integer"
		case reflect.Float32, reflect.Float64:
			return "must be a number"
		case reflect.String:
			return "must be a string"
		case reflect.Bool:
			return "must be a boolean"
		}
		return "has the wrong type"
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field") {
		return "is not a known field"
	}
	return err.Error()
}

// marshal is the one JSON encoding of every answer: compact, newline-terminated.
func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return append(b, '\n'), nil
}

// writeJSON answers status with v encoded by marshal.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	writeBody(w, status, "application/json", b)
	return nil
}

// writeBody answers status with exactly body.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	// #nosec G705 -- body is JSON this package encoded, sent as application/json
	// or problem+json, never HTML; the client may be gone, nothing to do about it.
	_, _ = w.Write(body)
}
