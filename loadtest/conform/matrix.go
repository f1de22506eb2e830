package conform

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// matrix runs the rules on fresh keys; its exchanges feed the rows that
// grade every answer (problem+json, Retry-After).
type matrix struct {
	t   Target
	ctx context.Context
	mu  sync.Mutex
	all []Exchange
}

// send sends r, retrying a 429 or 503 up to 4 times after its Retry-After
// (at most 3 s), and returns the last exchange; every one is kept.
func (m *matrix) send(r request) Exchange {
	var ex Exchange
	for try := 0; ; try++ {
		ex = m.t.do(m.ctx, r)
		m.mu.Lock()
		m.all = append(m.all, ex)
		m.mu.Unlock()
		if (ex.Status != http.StatusTooManyRequests && ex.Status != http.StatusServiceUnavailable) || try == 4 {
			return ex
		}
		d := retryAfter(ex.Header)
		if d <= 0 || d > 3*time.Second {
			d = time.Second
		}
		select {
		case <-m.ctx.Done():
			return ex
		case <-time.After(d):
		}
	}
}

func (m *matrix) post(key *string, cred, payload string) Exchange {
	return m.send(request{method: m.t.Method, url: m.t.URL, key: key, cred: cred, payload: payload})
}

// effects reads the effect count of key into row; ok is false when the
// target has no reader or the read failed (then row fails).
func (m *matrix) effects(row *Row, key, cred string, first Exchange) (int, bool) {
	if m.t.Effects == nil {
		return 0, false
	}
	n, err := m.t.Effects.Effects(m.ctx, EffectQuery{Key: key, Credential: cred, Location: m.t.location(first)})
	if err != nil {
		row.Effects = append(row.Effects, fmt.Sprintf("%s (%s): %v", key, cred, err))
		row.Result, row.Detail = Fail, "the effect reader failed: "+err.Error()
		return 0, false
	}
	row.Effects = append(row.Effects, fmt.Sprintf("%s (%s): %d", key, cred, n))
	return n, true
}

// once checks that key took effect exactly once (when the target can say);
// it fails row otherwise and reports whether it passed.
func (m *matrix) once(row *Row, key, cred string, first Exchange) bool {
	n, ok := m.effects(row, key, cred, first)
	if !ok {
		return row.Result != Fail
	}
	if n != 1 {
		row.Result, row.Detail = Fail, fmt.Sprintf("the operation took effect %d times for one key, want 1", n)
		return false
	}
	return true
}

func ptr(s string) *string { return &s }

func sameAnswer(a, b Exchange) bool { return a.Status == b.Status && bytes.Equal(a.Body, b.Body) }

func pass(row Row, detail string, ev ...Exchange) Row {
	row.Result, row.Detail, row.Evidence = Pass, detail, append(row.Evidence, ev...)
	return row
}

func fail(row Row, detail string, ev ...Exchange) Row {
	row.Result, row.Detail, row.Evidence = Fail, detail, append(row.Evidence, ev...)
	return row
}

func na(row Row, detail string, ev ...Exchange) Row {
	row.Result, row.Detail, row.Evidence = NA, detail, append(row.Evidence, ev...)
	return row
}

// first sends the payload on a fresh key and fails row unless it is 2xx.
func (m *matrix) first(row *Row, key, cred string) (Exchange, bool) {
	ex := m.post(ptr(key), cred, "a")
	if !is2xx(ex.Status) {
		*row = fail(*row, "the first request with a fresh key was not accepted (want 2xx)", ex)
		return ex, false
	}
	return ex, true
}

func (m *matrix) keyRequired() Row {
	row := Row{ID: "key-required", Section: "2.7", Level: SHOULD, Rule: "a request without Idempotency-Key is refused with 400"}
	ex := m.post(nil, "a", "a")
	if ex.Status == http.StatusBadRequest {
		return pass(row, "400 without a key", ex)
	}
	return fail(row, fmt.Sprintf("answered %d without a key", ex.Status), ex)
}

func (m *matrix) malformed(id, rule, key string) Row {
	row := Row{ID: id, Section: "5", Level: SHOULD, Rule: rule}
	ex := m.post(ptr(key), "a", "a")
	if ex.Status == http.StatusBadRequest {
		return pass(row, "400 for the malformed key", ex)
	}
	return fail(row, fmt.Sprintf("answered %d for a malformed key, want 400", ex.Status), ex)
}

func (m *matrix) keyRepeated() Row {
	row := Row{ID: "key-repeated", Section: "2.1", Level: Profile, Rule: "two Idempotency-Key fields in one request are refused with 400"}
	ex := m.send(request{method: m.t.Method, url: m.t.URL, keys: []string{newKey("rep1"), newKey("rep2")}, cred: "a", payload: "a"})
	if ex.Status == http.StatusBadRequest {
		return pass(row, "400 for two key fields", ex)
	}
	return fail(row, fmt.Sprintf("answered %d for two key fields, want 400", ex.Status), ex)
}

func (m *matrix) keyQuoted() Row {
	row := Row{ID: "key-quoted", Section: "2.1", Level: SHOULD, Rule: `the sf-string form "k" is accepted and names the same key as k`}
	k := newKey("quoted")
	q := m.post(ptr(`"`+k+`"`), "a", "a")
	if !is2xx(q.Status) {
		return fail(row, fmt.Sprintf("answered %d for a quoted key, want 2xx", q.Status), q)
	}
	b := m.post(ptr(k), "a", "a")
	row.Evidence = []Exchange{q, b}
	if !sameAnswer(q, b) {
		return fail(row, "the bare key got another answer than its quoted form (status or body differ): two keys, not one")
	}
	if !m.once(&row, k, "a", q) {
		return row
	}
	return pass(row, "the bare key replayed the quoted key's answer")
}

// replays checks replay, its headers and its marker on one key.
func (m *matrix) replays() []Row {
	replay := Row{ID: "replay", Section: "2.6", Level: SHOULD, Rule: "a retry gets the first answer again (status and body bytes), and the operation runs once"}
	headers := Row{ID: "replay-headers", Section: "2.6", Level: Profile, Rule: "a replay repeats the chosen headers (" + strings.Join(m.t.ReplayHeaders, ", ") + ")"}
	marker := Row{ID: "replay-marker", Section: "-", Level: Profile, Rule: "a replay is marked (" + m.t.ReplayMarker + "), the first answer is not"}
	k := newKey("replay")
	a, ok := m.first(&replay, k, "a")
	if !ok {
		return []Row{replay, na(headers, "no first answer to replay"), na(marker, "no first answer to replay")}
	}
	b := m.post(ptr(k), "a", "a")
	ev := []Exchange{a, b}
	switch {
	case !sameAnswer(a, b):
		replay = fail(replay, fmt.Sprintf("the retry got %d and %d body bytes, the first %d and %d (sha %s vs %s)",
			b.Status, len(b.Body), a.Status, len(a.Body), fingerprint(b.Body), fingerprint(a.Body)), ev...)
	default:
		replay.Evidence = ev
		if m.once(&replay, k, "a", a) {
			replay = pass(replay, "same status and body bytes")
		}
	}
	var diff []string
	for _, h := range m.t.ReplayHeaders {
		got, want := b.Header.Values(h), a.Header.Values(h)
		switch {
		case len(want) > 0 && len(got) == 0:
			diff = append(diff, "dropped "+h)
		case strings.Join(got, "\n") != strings.Join(want, "\n"):
			diff = append(diff, "changed "+h)
		}
	}
	if len(diff) > 0 {
		// The values are in the evidence; the detail stays the same from run to run.
		headers = fail(headers, "the replay "+strings.Join(diff, ", "), ev...)
	} else {
		headers = pass(headers, "the chosen headers are repeated", ev...)
	}
	switch {
	case m.t.ReplayMarker == "":
		marker = na(marker, "no replay marker configured")
	case a.Header.Get(m.t.ReplayMarker) != "":
		marker = fail(marker, "the first answer carries "+m.t.ReplayMarker, ev...)
	case b.Header.Get(m.t.ReplayMarker) == "":
		marker = fail(marker, "the replay lacks "+m.t.ReplayMarker, ev...)
	default:
		marker = pass(marker, m.t.ReplayMarker+": "+b.Header.Get(m.t.ReplayMarker)+" on the replay only", ev...)
	}
	return []Row{replay, headers, marker}
}

// otherPayload checks the 422 and that the key still replays its first
// answer afterwards.
func (m *matrix) otherPayload() []Row {
	other := Row{ID: "other-payload", Section: "2.7", Level: SHOULD, Rule: "the same key with another payload is refused with 422"}
	poison := Row{ID: "no-poison", Section: "2.6", Level: SHOULD, Rule: "after that 422 the original payload still gets its first answer"}
	k := newKey("other")
	a, ok := m.first(&other, k, "a")
	if !ok {
		return []Row{other, na(poison, "no first answer")}
	}
	b := m.post(ptr(k), "a", "b")
	if b.Status == http.StatusUnprocessableEntity {
		other = pass(other, "422 for another payload", a, b)
	} else {
		other = fail(other, fmt.Sprintf("answered %d for another payload under a used key, want 422", b.Status), a, b)
	}
	c := m.post(ptr(k), "a", "a")
	poison.Evidence = []Exchange{a, b, c}
	if !sameAnswer(a, c) {
		return []Row{other, fail(poison, fmt.Sprintf("the original's retry got %d (%d bytes), not its first answer %d (%d bytes)", c.Status, len(c.Body), a.Status, len(a.Body)))}
	}
	if m.once(&poison, k, "a", a) {
		poison = pass(poison, "the original still replays its first answer")
	}
	return []Row{other, poison}
}

// concurrentN is how many identical first requests race on one key.
const concurrentN = 8

func (m *matrix) concurrent() Row {
	row := Row{ID: "concurrent", Section: "2.6", Level: MUST, Rule: fmt.Sprintf("%d identical requests at once on a fresh key: 409 or the same answer, one effect", concurrentN)}
	k := newKey("conc")
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		exs   = make([]Exchange, concurrentN)
	)
	for i := range exs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			exs[i] = m.t.do(m.ctx, request{method: m.t.Method, url: m.t.URL, key: ptr(k), cred: "a", payload: "a"})
		}()
	}
	close(start)
	wg.Wait()
	m.mu.Lock()
	m.all = append(m.all, exs...)
	m.mu.Unlock()
	row.Evidence = exs
	var ok *Exchange
	conflicts := 0
	for i, ex := range exs {
		switch {
		case ex.Status == http.StatusConflict:
			conflicts++
		case is2xx(ex.Status):
			if ok == nil {
				ok = &exs[i]
			} else if !sameAnswer(*ok, ex) {
				return fail(row, "two concurrent requests got different 2xx answers: the operation ran twice")
			}
		default:
			return fail(row, fmt.Sprintf("a concurrent duplicate got %d, want 409 or the first answer", ex.Status))
		}
	}
	// After the race settles the key answers with its one result.
	var after Exchange
	for try := 0; try < 10; try++ {
		after = m.post(ptr(k), "a", "a")
		if after.Status != http.StatusConflict {
			break
		}
		d := retryAfter(after.Header)
		if d <= 0 || d > 3*time.Second {
			d = 200 * time.Millisecond
		}
		time.Sleep(d)
	}
	row.Evidence = append(row.Evidence, after)
	if !is2xx(after.Status) || (ok != nil && !sameAnswer(*ok, after)) {
		return fail(row, fmt.Sprintf("after the race the key answered %d, not the one answer", after.Status))
	}
	if !m.once(&row, k, "a", after) {
		return row
	}
	return pass(row, fmt.Sprintf("%d answered 409, the others the same answer", conflicts))
}

func (m *matrix) scope() Row {
	row := Row{ID: "scope", Section: "5", Level: SHOULD, Rule: "keys are scoped per client: one key from two credentials is two operations"}
	if m.t.OtherHeader == nil {
		return na(row, "no second credential given")
	}
	k := newKey("scope")
	a, ok := m.first(&row, k, "a")
	if !ok {
		return row
	}
	b := m.post(ptr(k), "b", "a")
	row.Evidence = []Exchange{a, b}
	if !is2xx(b.Status) {
		return fail(row, fmt.Sprintf("the second credential got %d for the first credential's key, want its own 2xx", b.Status))
	}
	if m.t.ReplayMarker != "" && b.Header.Get(m.t.ReplayMarker) != "" {
		return fail(row, "the second credential got the first credential's answer, replayed")
	}
	if m.t.Effects != nil {
		ea, oka := m.effects(&row, k, "a", a)
		eb, okb := m.effects(&row, k, "b", b)
		if !oka || !okb {
			return row
		}
		if ea != 1 || eb != 1 {
			return fail(row, fmt.Sprintf("effects %d for the first credential and %d for the second, want 1 and 1", ea, eb))
		}
		return pass(row, "one effect for each credential")
	}
	if m.t.ReplayMarker != "" {
		return pass(row, "the second credential's answer is not a replay")
	}
	if bytes.Equal(a.Body, b.Body) {
		return na(row, "same bytes for both credentials, and no marker or effect reader to tell a replay")
	}
	return pass(row, "the second credential got its own answer")
}

func (m *matrix) failNotCached() Row {
	row := Row{ID: "5xx-not-cached", Section: "2.6", Level: Profile, Rule: "a 5xx first answer is not replayed: the retry runs the operation"}
	if m.t.FailHeader == nil {
		return na(row, "no way to make the target fail given")
	}
	k := newKey("5xx")
	a := m.send(request{method: m.t.Method, url: m.t.URL, key: ptr(k), cred: "a", payload: "a", extra: m.t.FailHeader})
	if a.Status < 500 {
		return na(row, fmt.Sprintf("the fail knob got %d, not a 5xx", a.Status), a)
	}
	b := m.post(ptr(k), "a", "a")
	row.Evidence = []Exchange{a, b}
	if !is2xx(b.Status) {
		return fail(row, fmt.Sprintf("the retry after a %d got %d, want a fresh 2xx", a.Status, b.Status))
	}
	if m.t.ReplayMarker != "" && b.Header.Get(m.t.ReplayMarker) != "" {
		return fail(row, "the retry after a 5xx is marked as a replay")
	}
	if !m.once(&row, k, "a", b) {
		return row
	}
	return pass(row, "the retry ran the operation")
}

func (m *matrix) getIgnored() Row {
	row := Row{ID: "get-ignored", Section: "1", Level: Profile, Rule: "a key on GET changes nothing and does not use up the key"}
	k := newKey("get")
	g0 := m.send(request{method: http.MethodGet, url: m.t.GetURL, cred: "a"})
	g1 := m.send(request{method: http.MethodGet, url: m.t.GetURL, key: ptr(k), cred: "a"})
	p := m.post(ptr(k), "a", "a")
	row.Evidence = []Exchange{g0, g1, p}
	if g0.Status != g1.Status {
		return fail(row, fmt.Sprintf("GET answered %d with a key, %d without", g1.Status, g0.Status))
	}
	if !is2xx(p.Status) {
		return fail(row, fmt.Sprintf("the key used on GET then got %d on %s, want 2xx", p.Status, m.t.Method))
	}
	if m.t.ReplayMarker != "" && p.Header.Get(m.t.ReplayMarker) != "" {
		return fail(row, "the key used on GET made the "+m.t.Method+" a replay")
	}
	return pass(row, "GET ignores the key")
}

func (m *matrix) expiry() Row {
	row := Row{ID: "expiry", Section: "2.3", Level: SHOULD, Rule: "the key expiry policy is published"}
	if m.t.ExpiryDoc == "" {
		return na(row, "no expiry policy URL given")
	}
	ex := m.t.do(m.ctx, request{method: http.MethodGet, url: m.t.ExpiryDoc})
	if is2xx(ex.Status) {
		return pass(row, "the policy URL answers", ex)
	}
	return fail(row, fmt.Sprintf("the policy URL answered %d", ex.Status), ex)
}

// problemJSON grades every 4xx answer the matrix got.
func problemJSON(all []Exchange) Row {
	row := Row{ID: "problem-json", Section: "2.7", Level: Profile, Rule: "error answers (4xx) are application/problem+json (RFC 9457)"}
	n := 0
	for _, ex := range all {
		if ex.Status < 400 || ex.Status >= 500 {
			continue
		}
		n++
		mt, _, _ := mime.ParseMediaType(ex.Header.Get("Content-Type"))
		if mt != "application/problem+json" {
			return fail(row, fmt.Sprintf("a %d answer is %q", ex.Status, ex.Header.Get("Content-Type")), ex)
		}
	}
	if n == 0 {
		return na(row, "no 4xx answer seen")
	}
	return pass(row, fmt.Sprintf("%d 4xx answers, all problem+json", n))
}

// retryAfterRow grades every 409, 429 and 503 answer seen.
func retryAfterRow(all []Exchange) Row {
	row := Row{ID: "retry-after", Section: "2.7", Level: Profile, Rule: "409, 429 and 503 answers carry Retry-After"}
	n := 0
	for _, ex := range all {
		if ex.Status != http.StatusConflict && ex.Status != http.StatusTooManyRequests && ex.Status != http.StatusServiceUnavailable {
			continue
		}
		n++
		if retryAfter(ex.Header) < 0 {
			return fail(row, fmt.Sprintf("a %d answer has no valid Retry-After (%q)", ex.Status, ex.Header.Get("Retry-After")), ex)
		}
	}
	if n == 0 {
		return na(row, "no 409, 429 or 503 answer seen")
	}
	return pass(row, fmt.Sprintf("%d answers, all with Retry-After", n))
}

// retryAfter parses Retry-After (seconds or an HTTP date); -1 when absent
// or invalid.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return -1
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
		return 0
	}
	return -1
}
