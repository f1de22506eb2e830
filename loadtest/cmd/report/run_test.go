package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServesTheNewestPage(t *testing.T) {
	root := t.TempDir()
	for i, name := range []string{"old", "new"} {
		dir := filepath.Join(root, ".run", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "report.html")
		if err := os.WriteFile(p, []byte("page "+name), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(time.Duration(i-2) * time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"report"}, w, io.Discard); w.Close() }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	sc := bufio.NewScanner(out)
	var url string
	for sc.Scan() {
		if f := strings.TrimSpace(sc.Text()); strings.HasPrefix(f, "http://127.0.0.1:") {
			url = f
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if url == "" {
		t.Fatal("no URL printed")
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if got := string(b); got != "page new" {
		t.Errorf("GET %s = %q, want the newest page", url, got)
	}
}
