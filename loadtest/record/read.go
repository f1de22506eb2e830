package record

import (
	"bufio"
	"encoding/json"
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
// (--log-format=json) or its logfmt lines (the default); a line whose
// message is not an attempt record counts as Other. It fails on a message
// that claims to be an attempt record but does not parse, naming the line.
func Read(r io.Reader) (Log, error) {
	var l Log
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	for n := 1; sc.Scan(); n++ {
		msg, ok := message(sc.Text())
		if !ok || !strings.HasPrefix(msg, `{"kind":"attempt"`) {
			l.Other++
			continue
		}
		var a Attempt
		if err := json.Unmarshal([]byte(msg), &a); err != nil {
			return Log{}, fmt.Errorf("line %d: %w", n, err)
		}
		l.Attempts = append(l.Attempts, a)
	}
	if err := sc.Err(); err != nil {
		return Log{}, err
	}
	return l, nil
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
