package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Log is the content of one console output file.
type Log struct {
	Attempts []Attempt
	// Other counts console lines that are not attempt records (warnings,
	// k6's own messages).
	Other int
	// PartialTail is true when the stream ends in an attempt record cut
	// off before its end of line: its writer was killed mid-write. That
	// record is not read; the caller reports it.
	PartialTail bool
}

// maxLine bounds one console line; a record is well under 2 KiB.
const maxLine = 1 << 20

// ReadFile reads the console output file at path; see Read.
func ReadFile(path string) (Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return Log{}, fmt.Errorf("read records: %w", err)
	}
	defer f.Close()
	l, err := Read(f)
	if err != nil {
		return Log{}, fmt.Errorf("read records %s: %w", path, err)
	}
	return l, nil
}

// Read parses a k6 console output stream. Lines may be k6's JSON log lines
// (--log-format=json) or its logfmt lines (the default); a line that is not
// an attempt record counts as Other. It fails, naming the line, on a line
// that claims to be an attempt record (it holds "kind":"attempt") but does
// not parse as one: a truncated or corrupted record would otherwise drop
// an attempt from the histories unnoticed. One exception: the last line,
// when the stream ends without its newline, is what a writer killed
// mid-write leaves; it sets PartialTail instead.
func Read(r io.Reader) (Log, error) {
	var l Log
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	unterminated := false // the token just scanned is the stream's last and has no newline
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		unterminated = atEOF && tok != nil && adv == len(data) && data[len(data)-1] != '\n'
		return adv, tok, err
	})
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		msg, ok := message(line)
		if !ok || !strings.HasPrefix(msg, `{"kind":"attempt"`) {
			if !claims(line) {
				l.Other++
				continue
			}
			if unterminated {
				l.PartialTail = true
				continue
			}
			return Log{}, fmt.Errorf("line %d: %w", n, ErrBadRecord)
		}
		var a Attempt
		if err := json.Unmarshal([]byte(msg), &a); err != nil {
			if unterminated {
				l.PartialTail = true
				continue
			}
			return Log{}, fmt.Errorf("line %d: %w: %w", n, ErrBadRecord, err)
		}
		l.Attempts = append(l.Attempts, a)
	}
	if err := sc.Err(); err != nil {
		return Log{}, err
	}
	return l, nil
}

// ErrBadRecord is a line that claims to be an attempt record but does not
// parse as one (truncated or corrupted).
var ErrBadRecord = errors.New("attempt record does not parse (truncated or corrupted)")

// claims reports whether a console line holds an attempt record's marker,
// as written (raw log format) or escaped inside a JSON or logfmt line.
func claims(line string) bool {
	return strings.Contains(line, `"kind":"attempt"`) || strings.Contains(line, `\"kind\":\"attempt\"`)
}

// message extracts the console message from one k6 log line.
func message(line string) (string, bool) {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "{") {
		var v struct {
			Msg *string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &v) != nil || v.Msg == nil {
			return "", false
		}
		return *v.Msg, true
	}
	// logfmt: ... msg="{\"kind\":...}" source=console
	var rest string
	if after, ok := strings.CutPrefix(line, "msg="); ok {
		rest = after
	} else if _, after, ok := strings.Cut(line, " msg="); ok {
		rest = after
	} else {
		return "", false
	}
	if !strings.HasPrefix(rest, `"`) {
		v, _, _ := strings.Cut(rest, " ")
		return v, true
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", false
	}
	v, err := strconv.Unquote(q)
	return v, err == nil
}
