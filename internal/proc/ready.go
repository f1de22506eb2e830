package proc

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// WaitHTTP polls url every 200 ms until it answers 200 OK, at most
// timeout. It fails at once when p (if not nil) exits first, so that a
// process that cannot start is reported as such, not as a timeout.
func WaitHTTP(ctx context.Context, p *Proc, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var exited <-chan struct{}
	if p != nil {
		exited = p.Done()
	}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited (%v) before %s answered", p.Name, p.err, url)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 200 within %s: %w", url, timeout, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
