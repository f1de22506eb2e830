package proc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// WaitHTTP polls url every 200 ms until it answers 200 OK, at most
// timeout. It fails at once when p (if not nil) exits first, so that a
// process that cannot start is reported as such, not as a timeout; the
// error quotes the last answer.
func WaitHTTP(ctx context.Context, p *Proc, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var exited <-chan struct{}
	last := "no answer"
	if p != nil {
		exited = p.Done()
	}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
		} else {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited (%v) before %s answered 200; last answer: %s", p.Name, p.err, url, last)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 200 within %s: %w; last answer: %s", url, timeout, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
