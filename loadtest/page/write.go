package page

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

//go:embed page.html
var template []byte

// dataOpen opens the script element that holds the page's data; in
// page.html it is followed by null.
const dataOpen = `<script id="data" type="application/json">`

var marker = []byte(dataOpen + "null")

// Write renders d as one self-contained HTML page. The data is embedded as
// JSON; encoding/json escapes <, > and &, so it cannot close the script
// element it sits in.
func Write(w io.Writer, d Data) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("page data: %w", err)
	}
	before, after, ok := bytes.Cut(template, marker)
	if !ok {
		return errors.New("page.html has no data marker")
	}
	for _, part := range [][]byte{before, []byte(dataOpen), b, after} {
		if _, err := w.Write(part); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile renders d into path.
func WriteFile(path string, d Data) error {
	var b bytes.Buffer
	if err := Write(&b, d); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// ReadFile reads the data back from a page Write wrote (make compare
// gathers its strategies' stories from their pages).
func ReadFile(path string) (Data, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Data{}, err
	}
	_, data, ok := bytes.Cut(b, []byte(dataOpen))
	if !ok {
		return Data{}, fmt.Errorf("%s: no page data", path)
	}
	var d Data
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		return Data{}, fmt.Errorf("%s: page data: %w", path, err)
	}
	return d, nil
}
