package httpserver

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSlowHeadersDoNotStarveRequests: 200 connections that send one header
// byte a second do not delay normal requests, and the server cuts each of
// them off once ReadHeaderTimeout has passed.
func TestSlowHeadersDoNotStarveRequests(t *testing.T) {
	t.Parallel()
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }), slog.New(slog.DiscardHandler))
	srv.ReadHeaderTimeout = 2 * time.Second // the default (5s) would only make the test longer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	const slow = 200
	var cutOff atomic.Int32
	done := make(chan struct{}, slow)
	for range slow {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			defer func() { done <- struct{}{} }()
			header := "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 64) + "\r\n\r\n"
			for i := range len(header) {
				if _, err := c.Write([]byte{header[i]}); err != nil {
					cutOff.Add(1) // the server closed the connection
					return
				}
				time.Sleep(time.Second)
			}
		}()
	}

	client := &http.Client{Timeout: 2 * time.Second}
	for i := range 50 {
		start := time.Now()
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("request %d while %d slow connections are open: %v", i, slow, err)
		}
		resp.Body.Close()
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Errorf("request %d took %s with slow connections open, want under 500ms", i, took)
		}
		time.Sleep(20 * time.Millisecond)
	}

	deadline := time.After(srv.ReadHeaderTimeout + 5*time.Second)
	for range slow {
		select {
		case <-done:
		case <-deadline:
			t.Fatalf("only %d of %d slow connections were cut off within ReadHeaderTimeout + 5s", cutOff.Load(), slow)
		}
	}
	if cutOff.Load() != slow {
		t.Errorf("%d of %d slow connections cut off", cutOff.Load(), slow)
	}
}

func TestNewSetsTheLimits(t *testing.T) {
	t.Parallel()
	srv := New(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	if srv.ReadHeaderTimeout != ReadHeaderTimeout || srv.ReadTimeout != ReadTimeout || srv.IdleTimeout != IdleTimeout ||
		srv.MaxHeaderBytes != MaxHeaderBytes || srv.ErrorLog == nil {
		t.Errorf("New = %+v, want every limit set and an error log", srv)
	}
}
