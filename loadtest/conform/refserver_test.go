package conform_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncepay/oncepay/loadtest/conform"
)

// flaw is the one rule a refServer breaks ("" breaks none).
type flaw string

const (
	noFlaw            flaw = ""
	noKeyRequired     flaw = "executes without a key"
	noKeyValidation   flaw = "accepts malformed keys"
	repeatedKey       flaw = "accepts two key fields"
	noQuoted          flaw = "treats the quoted form as another key"
	no422             flaw = "replays the first answer to another payload"
	poisons           flaw = "lets another payload overwrite the key"
	caches5xx         flaw = "replays a 5xx"
	noScope           flaw = "shares keys across credentials"
	replayNewBytes    flaw = "replays other body bytes"
	replayDropsHeader flaw = "drops Location on replays"
	noMarker          flaw = "does not mark replays"
	noRetryAfter      flaw = "sends 409 without Retry-After"
	race              flaw = "checks then acts (no claim)"
	plainErrors       flaw = "answers errors as text/plain"
	getUsesKey        flaw = "stores a key sent on GET"
)

// failHeader makes refServer answer 500 (after claiming the key).
const failHeader = "X-Conform-Fail"

// refServer is a small idempotent create, correct except for its flaw:
// the reference the matrix is proven on, one broken rule at a time.
type refServer struct {
	flaw    flaw
	mu      sync.Mutex
	entries map[string]*entry
	effects map[string]int
	seq     int
}

type entry struct {
	fp     string
	done   bool
	status int
	header http.Header
	body   []byte
	replay int
}

func newRefServer(t *testing.T, f flaw) (*refServer, *httptest.Server) {
	t.Helper()
	s := &refServer{flaw: f, entries: map[string]*entry{}, effects: map[string]int{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *refServer) problem(w http.ResponseWriter, status int, detail string) {
	if status == http.StatusConflict && s.flaw != noRetryAfter {
		w.Header().Set("Retry-After", "0")
	}
	if s.flaw == plainErrors {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintln(w, detail)
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"about:blank","status":%d,"detail":%q}`, status, detail)
}

// scope is the store key of (credential, key).
func (s *refServer) scope(cred, key string) string {
	if s.flaw == noScope {
		return key
	}
	return cred + "|" + key
}

func validKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

func (s *refServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/policy" {
		fmt.Fprintln(w, "keys expire after 24 hours")
		return
	}
	cred := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if cred != "a" && cred != "b" {
		s.problem(w, http.StatusUnauthorized, "unknown credential")
		return
	}
	keys := r.Header.Values("Idempotency-Key")
	if r.Method == http.MethodGet {
		if s.flaw == getUsesKey && len(keys) == 1 {
			s.mu.Lock()
			s.entries[s.scope(cred, keys[0])] = &entry{fp: "GET", done: true, status: 200, header: http.Header{}, body: []byte("[]")}
			s.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "[]")
		return
	}
	body, _ := io.ReadAll(r.Body)
	sum := sha256.Sum256(body)
	fp := hex.EncodeToString(sum[:])
	switch {
	case len(keys) == 0 && s.flaw == noKeyRequired:
		s.execute(w, r, "", "", fp, body)
		return
	case len(keys) == 0:
		s.problem(w, http.StatusBadRequest, "Idempotency-Key is required")
		return
	case len(keys) > 1 && s.flaw != repeatedKey:
		s.problem(w, http.StatusBadRequest, "one Idempotency-Key, please")
		return
	}
	key := keys[0]
	if s.flaw != noQuoted && len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
	}
	if s.flaw != noKeyValidation && !validKey(key) {
		s.problem(w, http.StatusBadRequest, "malformed Idempotency-Key")
		return
	}
	sk := s.scope(cred, key)
	s.mu.Lock()
	e := s.entries[sk]
	switch {
	case e == nil:
		if s.flaw != race {
			s.entries[sk] = &entry{fp: fp}
		}
		s.mu.Unlock()
		s.execute(w, r, sk, cred, fp, body)
		return
	case e.fp != fp && s.flaw == poisons && e.done:
		e.fp = fp
		s.mu.Unlock()
		s.problem(w, http.StatusUnprocessableEntity, "key used with another payload")
		return
	case e.fp != fp && (s.flaw != no422 || !e.done):
		s.mu.Unlock()
		s.problem(w, http.StatusUnprocessableEntity, "key used with another payload")
		return
	case !e.done:
		s.mu.Unlock()
		s.problem(w, http.StatusConflict, "in progress")
		return
	}
	e.replay++
	status, header, b, n := e.status, e.header.Clone(), e.body, e.replay
	s.mu.Unlock()
	if s.flaw == replayNewBytes {
		b = []byte(strings.Replace(string(b), "}", fmt.Sprintf(`,"replay":%d}`, n), 1))
	}
	if s.flaw == replayDropsHeader {
		header.Del("Location")
	}
	if s.flaw != noMarker {
		header.Set("Idempotent-Replayed", "true")
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	w.Write(b)
}

// execute runs the operation (20 ms, one effect) and stores its answer
// under sk ("": no key).
func (s *refServer) execute(w http.ResponseWriter, r *http.Request, sk, cred, fp string, body []byte) {
	time.Sleep(20 * time.Millisecond)
	if r.Header.Get(failHeader) != "" {
		s.mu.Lock()
		if s.flaw == caches5xx {
			s.entries[sk] = &entry{fp: fp, done: true, status: 500, header: http.Header{"Content-Type": {"application/problem+json"}}, body: []byte(`{"status":500}`)}
		} else {
			delete(s.entries, sk)
		}
		s.mu.Unlock()
		s.problem(w, http.StatusInternalServerError, "failed as asked")
		return
	}
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("r%d", s.seq)
	s.effects[sk]++
	e := &entry{fp: fp, done: true, status: http.StatusCreated,
		header: http.Header{"Content-Type": {"application/json"}, "Location": {"/things/" + id}},
		body:   fmt.Appendf(nil, `{"id":%q,"credential":%q,"request":%q}`, id, cred, body)}
	if sk != "" {
		s.entries[sk] = e
	}
	s.mu.Unlock()
	for k, v := range e.header {
		w.Header()[k] = v
	}
	w.WriteHeader(e.status)
	w.Write(e.body)
}

// target points conform at s.
func (s *refServer) target(srv *httptest.Server) conform.Target {
	return conform.Target{
		URL:         srv.URL + "/things",
		Header:      http.Header{"Authorization": {"Bearer a"}, "Content-Type": {"application/json"}},
		OtherHeader: http.Header{"Authorization": {"Bearer b"}},
		Body:        `{"name":"{{vary}}"}`,
		FailHeader:  http.Header{failHeader: {"1"}},
		ExpiryDoc:   srv.URL + "/policy",
		Effects: conform.EffectFunc(func(_ context.Context, q conform.EffectQuery) (int, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.effects[s.scope(q.Credential, q.Key)], nil
		}),
		Storm: conform.Storm{Keys: 12, Clients: 4},
	}
}
