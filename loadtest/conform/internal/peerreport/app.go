package peerreport

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncepay/oncepay/loadtest/conform"
)

// Every peer mounts its middleware the same way: on POST /things of a
// tiny app (Things), keyed by KeyHeader, accepting keys of 1 to MaxKeyLen
// characters (ValidKey), keeping the answer's KeepHeaders, for Lifetime.
const (
	KeyHeader = "Idempotency-Key"
	MaxKeyLen = 255
	Lifetime  = time.Hour
)

// KeepHeaders are the answer headers a peer's middleware replays.
func KeepHeaders() []string { return []string{"Content-Type", "Location"} }

// ValidKey reports whether k is a key the peers accept: 1 to MaxKeyLen
// characters. A peer answers 400 to any other.
func ValidKey(k string) bool { return len(k) > 0 && len(k) <= MaxKeyLen }

// WorkTime is how long a POST /things takes: long enough for the
// duplicates of a storm to overlap.
const WorkTime = 20 * time.Millisecond

// Things is the app behind a peer's middleware: each POST /things makes
// a thing with the next id. It is safe for concurrent use.
type Things struct{ n atomic.Int64 }

// Create does a POST /things with body: it takes WorkTime and returns the
// new thing's Location and its answer (status 201, JSON), which echoes
// body.
func (th *Things) Create(body []byte) (location string, answer map[string]any) {
	time.Sleep(WorkTime)
	id := th.n.Add(1)
	return fmt.Sprintf("/things/%d", id), map[string]any{"id": id, "body": string(body)}
}

// Target is what conform checks of a peer whose app listens on addr
// (host:port): POST /things with a JSON body that varies by key, in
// Storm's storm.
func Target(addr string) conform.Target {
	return conform.Target{
		URL:    "http://" + addr + "/things",
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   `{"name":"{{vary}}"}`,
		Storm:  Storm(),
	}
}

// RedisURL returns REDIS_URL for a peer's Redis storage, failing t when
// it is unset.
func RedisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("REDIS_URL")
	if u == "" {
		t.Fatal("REDIS_URL is not set: run under scripts/harness (make conform-peers does)")
	}
	return u
}
