package idem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// appendCanonical appends the canonical form of body (CanonicalJSON) to
// dst.
//
// It gives the bytes that decoding body with encoding/json (UseNumber)
// and encoding the value again (SetEscapeHTML(false), maps with sorted
// keys) gives, without building the value: a valid body (json.Valid, the
// same scanner, so the same documents) is read once into a flat list of
// its tokens and written out from it, objects' members sorted by their
// decoded key, the last of equal keys kept (as a map keeps it). An invalid
// body takes encoding/json's way (canonicalStd), which returns its error.
// canonicalStd is also the oracle of the tests (FuzzCanonicalSame).
//
// Hand-written because encoding/json offers no canonical form but through
// a map[string]any: that way allocates about thirty times and takes three
// quarters of a new request's CPU outside Redis.
func appendCanonical(dst, body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return dst, nil
	}
	if !json.Valid(body) {
		c, err := canonicalStd(body)
		return append(dst, c...), err
	}
	w := writers.Get().(*canonWriter)
	w.in = body
	w.tokenize()
	dst = w.write(dst, 0)
	w.in, w.toks, w.mems = nil, w.toks[:0], w.mems[:0]
	if cap(w.toks) <= maxPooledTokens {
		writers.Put(w)
	}
	return dst, nil
}

// writers holds canonWriters between calls, so that their token lists are
// not allocated per call; one that grew past maxPooledTokens is dropped.
var writers = sync.Pool{New: func() any { return new(canonWriter) }}

const maxPooledTokens = 1 << 12

// canonicalStd is CanonicalJSON by encoding/json: decode into an any,
// encode again.
func canonicalStd(body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("idem: fingerprint: body is not JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("idem: fingerprint: trailing data after the JSON value")
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, fmt.Errorf("idem: fingerprint: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte{'\n'}), nil
}

// token is one value of a valid document: an object ('{'), array ('['),
// string ('"') or other literal ('0': a number, true, false, null), its
// bytes in the input (a container: its opening byte only) and the index of
// the token after it (after a container's last member).
type token struct {
	kind       byte
	start, end int
	next       int
}

// canonWriter holds a valid document's tokens; an object's tokens are its
// keys and values in turn.
type canonWriter struct {
	in   []byte
	toks []token
	mems []member // members of the objects being written, innermost last
}

type member struct {
	key []byte // decoded
	val int    // token index
}

// tokenize lists the tokens of w.in, which json.Valid accepted.
func (w *canonWriter) tokenize() {
	var open []int // containers not yet closed
	for i := 0; i < len(w.in); i++ {
		switch c := w.in[i]; c {
		case ' ', '\t', '\r', '\n', ',', ':':
		case '{', '[':
			open = append(open, len(w.toks))
			w.toks = append(w.toks, token{kind: c, start: i, end: i + 1})
		case '}', ']':
			t := open[len(open)-1]
			open = open[:len(open)-1]
			w.toks[t].next = len(w.toks)
		case '"':
			j := i + 1
			for w.in[j] != '"' {
				if w.in[j] == '\\' {
					j++
				}
				j++
			}
			w.toks = append(w.toks, token{kind: '"', start: i, end: j + 1, next: len(w.toks) + 1})
			i = j
		default: // a number, true, false or null: up to the next delimiter
			j := i + 1
			for j < len(w.in) && !isDelim(w.in[j]) {
				j++
			}
			w.toks = append(w.toks, token{kind: '0', start: i, end: j, next: len(w.toks) + 1})
			i = j - 1
		}
	}
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ',', ':', ']', '}':
		return true
	}
	return false
}

// write appends the canonical form of token i to dst.
func (w *canonWriter) write(dst []byte, i int) []byte {
	t := w.toks[i]
	switch t.kind {
	case '0':
		return append(dst, w.in[t.start:t.end]...)
	case '"':
		return appendJSONString(dst, unquoteJSON(w.in[t.start+1:t.end-1]), false)
	case '[':
		dst = append(dst, '[')
		for j := i + 1; j < t.next; j = w.toks[j].next {
			if j > i+1 {
				dst = append(dst, ',')
			}
			dst = w.write(dst, j)
		}
		return append(dst, ']')
	}
	// An object: its members sorted by decoded key, the last of equal
	// keys only.
	base := len(w.mems)
	for j := i + 1; j < t.next; j = w.toks[j+1].next {
		k := w.toks[j]
		w.mems = append(w.mems, member{key: unquoteJSON(w.in[k.start+1 : k.end-1]), val: j + 1})
	}
	mems := w.mems[base:]
	slices.SortStableFunc(mems, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	dst = append(dst, '{')
	first := true
	for n, m := range mems {
		if n+1 < len(mems) && bytes.Equal(m.key, mems[n+1].key) {
			continue // a later member has the same key: it wins
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, m.key, false)
		dst = append(dst, ':')
		dst = w.write(dst, m.val)
	}
	w.mems = w.mems[:base]
	return append(dst, '}')
}

// unquoteJSON returns the string whose JSON text, without its quotes, is
// s (valid), as encoding/json decodes it: escapes resolved, a lone or
// invalid surrogate escape and every byte of invalid UTF-8 replaced by
// U+FFFD. It returns s itself when there is nothing to change.
func unquoteJSON(s []byte) []byte {
	r := 0
	for r < len(s) {
		c := s[r]
		if c == '\\' {
			break
		}
		if c < utf8.RuneSelf {
			r++
			continue
		}
		rr, size := utf8.DecodeRune(s[r:])
		if rr == utf8.RuneError && size == 1 {
			break
		}
		r += size
	}
	if r == len(s) {
		return s
	}
	b := make([]byte, r, len(s)+2*utf8.UTFMax)
	copy(b, s[:r])
	for r < len(s) {
		c := s[r]
		switch {
		case c == '\\':
			r++
			switch e := s[r]; e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(s[r+1 : r+5])
				r += 5
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:r+6])); dec != utf8.RuneError {
							r += 6
							b = utf8.AppendRune(b, dec)
							continue
						}
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, e)
			}
			r++
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return b
}

// hex4 is the value of four hex digits (valid).
func hex4(s []byte) rune {
	var r rune
	for _, c := range s {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// appendJSONString appends s quoted as encoding/json does: \" and \\,
// the short escapes \b \f \n \r \t, \u00XX for the other control bytes
// (and for < > & when escapeHTML is set, as json.Marshal does; not with
// SetEscapeHTML(false)), \ufffd for each byte of invalid UTF-8, \u2028 and
// \u2029; the rest as is.
func appendJSONString[T []byte | string](dst []byte, s T, escapeHTML bool) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		rr, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if rr == utf8.RuneError && size == 1 { // not after unquoteJSON; as encoding/json
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			start = i + size
		}
		if rr == '\u2028' || rr == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[rr&0xF])
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
