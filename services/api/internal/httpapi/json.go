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
// both. A body that is not an object gives no errors; a body that is not
// valid JSON gives those of the members before the point where it fails;
// the decoder reports the rest.
//
// A valid body (json.Valid, one pass without allocations) is walked
// directly; any other goes through fieldNameErrorsTokens, which defines
// the answer and gives the same one for valid bodies (FuzzFieldNameErrors).
func fieldNameErrors(body []byte, names map[string]bool) []fieldError {
	if !json.Valid(body) {
		return fieldNameErrorsTokens(body, names)
	}
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return nil
	}
	var errs []fieldError
	var seen map[string]bool
	for i = skipSpace(body, i+1); body[i] != '}'; {
		end := stringEnd(body, i)
		name := memberName(body[i:end])
		switch {
		case seen[name]:
			errs = append(errs, fieldError{Field: name, Message: "given more than once"})
		case !names[name]:
			errs = append(errs, fieldError{Field: name, Message: unknownField(name, names)})
		}
		if seen == nil {
			seen = make(map[string]bool, len(names))
		}
		seen[name] = true
		i = skipSpace(body, skipValue(body, skipSpace(body, skipSpace(body, end)+1)))
		if body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return errs
}

// The helpers below walk a body that json.Valid accepted, so every index
// they return is inside it.

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index just after the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index just after the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[i])) {
		i++
	}
	return i
}

// memberName returns the name that the quoted string q spells, as
// encoding/json decodes it: escapes resolved, invalid UTF-8 replaced.
func memberName(q []byte) string {
	if bytes.IndexByte(q, '\\') < 0 && !hasNonASCII(q) {
		return string(q[1 : len(q)-1])
	}
	var s string
	_ = json.Unmarshal(q, &s) // q is a valid JSON string
	return s
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// fieldNameErrorsTokens is fieldNameErrors on json.Decoder's tokens: the
// reference for bodies that are not valid JSON, and for the fuzz test.
func fieldNameErrorsTokens(body []byte, names map[string]bool) []fieldError {
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
