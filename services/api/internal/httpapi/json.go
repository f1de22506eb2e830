package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
)

// maxBodyBytes is the largest request body accepted (64 KiB).
const maxBodyBytes = 64 << 10

// decodeJSON reads r's body, which must be one JSON object, into dst, a
// pointer to a struct. Failures are problems: a Content-Type other than
// application/json (charset utf-8 allowed) is 415; a body over maxBodyBytes
// is 413; an empty or malformed body, a field whose name is not exactly one
// of dst's JSON names (they are case-sensitive, unlike encoding/json's
// matching), a field given twice, a value of the wrong type or data after
// the object is 400 with field errors. So what dst holds is all the body
// said: two bodies that decode alike differ only in spelling.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if cs, ok := params["charset"]; err != nil || mt != "application/json" || ok && !strings.EqualFold(cs, "utf-8") {
		return newProblem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type",
			fmt.Sprintf("Content-Type %q: the body must be application/json", ct))
	}
	if r.ContentLength > maxBodyBytes {
		return &http.MaxBytesError{Limit: maxBodyBytes}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		return invalidRequest(fieldError{Message: "the body could not be read: " + err.Error()})
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return invalidRequest(fieldError{Message: "the body is empty; send a JSON object"})
	}
	if errs := fieldNameErrors(body, jsonNames(dst)); len(errs) > 0 {
		return invalidRequest(errs...)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return invalidRequest(jsonFieldError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalidRequest(fieldError{Message: "unexpected data after the JSON object"})
	}
	return nil
}

// fieldNameErrors returns an error for every member of body's top-level
// object whose name is not in names (compared exactly) and for every name
// given more than once, in body order. encoding/json matches names
// case-insensitively and keeps the last of duplicates, so without this
// check {"amount":100,"Amount":200} would decode as 200 while its bytes say
// both. A body that is not an object or not valid JSON gives no errors
// here; the decoder reports it.
func fieldNameErrors(body []byte, names map[string]bool) []fieldError {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var errs []fieldError
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errs
		}
		name, _ := tok.(string)
		switch {
		case seen[name]:
			errs = append(errs, fieldError{Field: name, Message: "given more than once"})
		case !names[name]:
			errs = append(errs, fieldError{Field: name, Message: unknownField(name, names)})
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return errs
		}
	}
	return errs
}

// unknownField is the message for a field that is not in names.
func unknownField(name string, names map[string]bool) string {
	for n := range names {
		if strings.EqualFold(n, name) {
			return fmt.Sprintf("unknown field (field names are case-sensitive: %s)", n)
		}
	}
	return "unknown field"
}

// jsonNames returns the JSON names of the fields of the struct dst points
// to.
func jsonNames(dst any) map[string]bool {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	names := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if name != "-" && f.IsExported() {
			names[name] = true
		}
	}
	return names
}

// jsonFieldError describes a json.Decoder error as a field error.
func jsonFieldError(err error) fieldError {
	var (
		syntax    *json.SyntaxError
		wrongType *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return fieldError{Message: fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, syntax)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fieldError{Message: "malformed JSON: the body ends early"}
	case errors.As(err, &wrongType) && wrongType.Field == "":
		return fieldError{Message: "the body must be a JSON object"}
	case errors.As(err, &wrongType):
		return fieldError{Field: wrongType.Field, Message: "must be " + kindName(wrongType.Type)}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fieldError{Field: strings.Trim(name, `"`), Message: "unknown field"}
	}
	return fieldError{Message: "invalid JSON: " + err.Error()}
}

func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.String:
		return "a string"
	}
	return "a " + t.Kind().String()
}

// encodeJSON is the one JSON encoder of responses: no HTML escaping, a
// trailing newline. Stored answers are its exact output.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return b.Bytes(), nil
}

// writeJSON answers v as application/json with status. It fails only if
// v cannot be encoded, before anything is written.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := encodeJSON(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body) // an error here means the client is gone; nothing to answer
	return nil
}
