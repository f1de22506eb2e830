package conform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// EffectQuery names what an EffectReader is asked about: the key, the
// credential it was sent with ("a" or "b"), and the Location of the first
// 2xx answer if there was one (resolved against the target URL).
type EffectQuery struct {
	Key        string
	Credential string
	Location   string
}

// EffectReader says how many times the operation took effect for a key
// (0 when it never did). Errors make the rows that need it fail.
type EffectReader interface {
	Effects(ctx context.Context, q EffectQuery) (int, error)
}

// EffectFunc adapts a function to EffectReader.
type EffectFunc func(ctx context.Context, q EffectQuery) (int, error)

// Effects calls f.
func (f EffectFunc) Effects(ctx context.Context, q EffectQuery) (int, error) { return f(ctx, q) }

// EffectURL reads effects over HTTP: Template with {key}, {credential} and
// {location} replaced (query-escaped, location as is) is fetched with GET
// and Header; a body that is an integer is the count, otherwise 2xx is 1
// and 404 is 0.
type EffectURL struct {
	Template string
	Header   http.Header
	Client   *http.Client
}

// Effects implements EffectReader.
func (e EffectURL) Effects(ctx context.Context, q EffectQuery) (int, error) {
	u := strings.NewReplacer("{key}", url.QueryEscape(q.Key), "{credential}", q.Credential, "{location}", q.Location).Replace(e.Template)
	if strings.Contains(e.Template, "{location}") && q.Location == "" {
		return 0, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("effect url %q: %w", u, err)
	}
	for k, vs := range e.Header {
		req.Header[k] = vs
	}
	c := e.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("effect url %q: %w", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && is2xx(resp.StatusCode) {
		return n, nil
	}
	switch {
	case is2xx(resp.StatusCode):
		return 1, nil
	case resp.StatusCode == http.StatusNotFound:
		return 0, nil
	}
	return 0, fmt.Errorf("effect url %q: answered %d", u, resp.StatusCode)
}

// EffectCommand reads effects with a shell command (sh -c) that prints the
// count; it gets CONFORM_KEY, CONFORM_CREDENTIAL and CONFORM_LOCATION in its
// environment.
type EffectCommand struct{ Command string }

// Effects implements EffectReader.
func (e EffectCommand) Effects(ctx context.Context, q EffectQuery) (int, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", e.Command)
	cmd.Env = append(os.Environ(), "CONFORM_KEY="+q.Key, "CONFORM_CREDENTIAL="+q.Credential, "CONFORM_LOCATION="+q.Location)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return 0, fmt.Errorf("effect command: %w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return 0, fmt.Errorf("effect command: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("effect command printed %q, want a count: %w", strings.TrimSpace(string(out)), err)
	}
	return n, nil
}

// location resolves ex's Location header against the target URL.
func (t Target) location(ex Exchange) string {
	l := ex.Header.Get("Location")
	if l == "" {
		return ""
	}
	base, err := url.Parse(t.URL)
	if err != nil {
		return l
	}
	ref, err := url.Parse(l)
	if err != nil {
		return l
	}
	return base.ResolveReference(ref).String()
}
