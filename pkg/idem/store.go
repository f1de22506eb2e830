package idem

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/oncepay/oncepay/lua"
	"github.com/redis/go-redis/v9"
)

// Config tunes a Store. Zero fields take the documented defaults.
type Config struct {
	// Lease is how long an owner holds a stage before another Begin may take
	// it over. Default 30s. Long work keeps it alive with Lease.Keep.
	Lease time.Duration
	// Margin is how long before its lease could end, counted from the send
	// time of its last successful Begin or Extend, a holder's work is
	// cancelled (Lease.Deadline, Lease.Keep). It covers the clock drift
	// between this process and Redis TIME and the time the work needs to
	// stop. Default a tenth of the lease, at least 100ms, at most half the
	// lease; a Margin not shorter than Lease takes the default.
	Margin time.Duration
	// Retention is the minimum TTL of the operation's hash, raised on Begin
	// (to Lease + Retention, so that a Complete within the lease need not
	// write it again) and on Complete (to Retention), never shortened.
	// Default 24h.
	Retention time.Duration
	// Timeout bounds every Redis call, so that a dead Redis cannot hang a
	// caller. Default 1s. The go-redis client should have
	// ContextTimeoutEnabled set so that reads honour it too.
	Timeout time.Duration
	// Observe, if set, is called after every operation (for metrics). It
	// must be safe for concurrent use and fast.
	Observe func(Event)
	// Unbatched sends every script on its own, one pooled connection per
	// call. By default a Store whose client has Pipeline (*redis.Client,
	// *redis.ClusterClient, *redis.Ring) sends the scripts of concurrent
	// calls together: the calls made while one batch is in flight go out
	// as the next, in one pipeline. A call that finds no batch in flight
	// is sent at once from its own goroutine. Either way every call is
	// bounded by Timeout and keeps the same contract, and a call whose
	// context has ended before it is sent is not sent.
	Unbatched bool
	// MaxQueue bounds the calls of a batching store that wait for the
	// batch in flight. A call whose context ends while it waits is taken
	// out of the queue and never sent. A Begin that finds MaxQueue calls
	// waiting fails at once with ErrOverloaded (a kind of ErrUnavailable)
	// and sends nothing, so that while Redis stalls or falls behind the
	// excess is refused fast instead of waiting out Timeout and leaving
	// Redis a backlog of work nobody waits for; Complete, Release and
	// Extend, which end or keep work already begun, are refused only when
	// twice MaxQueue calls wait. Default 512 (four batches of 128 scripts:
	// a few milliseconds of work for a Redis that runs tens of thousands
	// of scripts a second).
	MaxQueue int
}

// Store runs the boundary's scripts on one Redis. It is safe for concurrent
// use.
type Store struct {
	rdb                              redis.Scripter
	cfg                              Config
	pipe                             *pipe // nil: every call on its own
	begin, complete, release, extend script
	leaseArg, retentionArg           any // the lease and retention in ms, boxed once
}

// New returns a Store on rdb (a *redis.Client, *redis.ClusterClient or
// *redis.Ring; another redis.Scripter is used without batching, see
// Config.Unbatched).
func New(rdb redis.Scripter, cfg Config) *Store {
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Margin <= 0 || cfg.Margin >= cfg.Lease {
		cfg.Margin = defaultMargin(cfg.Lease)
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 24 * time.Hour
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = defaultMaxQueue
	}
	s := &Store{
		rdb:      rdb,
		cfg:      cfg,
		begin:    newScript(lua.Begin()),
		complete: newScript(lua.Complete()),
		release:  newScript(lua.Release()),
		extend:   newScript(lua.Extend()),
	}
	s.leaseArg, s.retentionArg = cfg.Lease.Milliseconds(), cfg.Retention.Milliseconds()
	if p, ok := rdb.(pipeliner); ok && !cfg.Unbatched {
		s.pipe = &pipe{rdb: p, timeout: cfg.Timeout, maxQueue: cfg.MaxQueue}
	}
	return s
}

// defaultMargin is a tenth of lease, at least 100ms, at most half of lease.
func defaultMargin(lease time.Duration) time.Duration {
	return min(max(lease/10, 100*time.Millisecond), lease/2)
}

// LeaseDuration returns the lease length this store asks for.
func (s *Store) LeaseDuration() time.Duration { return s.cfg.Lease }

// Outcome is the result of a successful Begin.
type Outcome int

const (
	// Acquired: the caller owns the stage and must Complete or Release it.
	Acquired Outcome = iota + 1
	// Completed: the stage was done before; Claim.Result holds its result.
	Completed
)

func (o Outcome) String() string {
	switch o {
	case Acquired:
		return "acquired"
	case Completed:
		return "completed"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Claim is what Begin found.
type Claim struct {
	Outcome Outcome
	// Attempt counts the claims of this stage: 1 for the first owner, 2 after
	// one takeover or release, and so on.
	Attempt int
	// TakeOver is true when the caller acquired a stage whose previous
	// owner's lease had run out (a crashed or stalled owner).
	TakeOver bool
	// Lease is the caller's ownership when Outcome is Acquired, else nil.
	Lease *Lease
	// Result is what Complete stored, byte for byte, when Outcome is
	// Completed, else nil.
	Result []byte
}

// Begin claims stage of k for a request with the given fingerprint.
//
// It returns a Claim with Outcome Acquired (and a Lease) or Completed (and
// the stored Result). It returns an *InProgressError (errors.Is
// ErrInProgress) while another owner's lease is live (whatever its
// fingerprint), ErrMismatch when the stage was completed under another
// fingerprint, and ErrUnavailable when Redis fails. A pending stage whose
// lease ran out is taken over whatever its fingerprint (TakeOver), and a
// Begin resent with this call's own owner token (a lost reply) is
// Acquired again, as the first run answered.
// When the store's queue is full (Config.MaxQueue) the error is
// ErrOverloaded (which also matches ErrUnavailable) and nothing was sent.
// When Redis is out of memory the error is ErrFull (which also matches
// ErrUnavailable) wherever the stage would have to be written (absent,
// released, or an expired lease to take over); a COMPLETED stage is still
// replayed, since that only reads. One Redis round trip.
//
// When Redis fails after the script was sent (a timeout, a connection
// lost: no error reply), the stage may be PENDING under a claim nobody
// holds, which would answer ErrInProgress to every retry until the lease
// ran out. Begin then releases that claim in the background, best effort,
// bounded by Timeout and shed like a Begin when the queue is full: the
// release script removes the stage only if this call's owner token still
// holds it, so it never touches another owner's claim. A claim whose
// release also fails waits out its lease. Nothing is released when the
// script cannot have run: an error reply, a call never sent (ctx ended
// first, or ErrOverloaded), a connection that could not be made.
func (s *Store) Begin(ctx context.Context, k Key, stage, fingerprint string) (Claim, error) {
	start := time.Now()
	owner, err := newOwner()
	if err != nil {
		return Claim{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	sent := time.Now() // at or before the send: the lease's deadline counts from it
	var key any = k.String()
	a := append(evalArgs(s.begin, key, 5), stage, owner, fingerprint, s.leaseArg, s.retentionArg)
	reply, err := s.eval(ctx, s.begin, a, classNew)
	res, ok := reply.([]any)
	if err == nil && !ok {
		err = fmt.Errorf("unexpected reply %v", reply)
	}
	if err != nil && mayHaveRun(err) {
		go s.abandon(key, stage, owner)
	}
	claim, err := s.parseBegin(k, key, stage, owner, res, err)
	if claim.Lease != nil {
		claim.Lease.sent = sent
	}
	s.observe(OpBegin, stage, beginOutcome(claim, err), start, err)
	return claim, err
}

// mayHaveRun reports whether a script call that failed with err may have
// run. It cannot have run, and mayHaveRun is false, after an error reply
// (a script that ran and failed, or a refusal such as OOM, writes
// nothing), a call that was never sent (its context ended first, or the
// queue was full: ErrOverloaded) and a connection that could not be made
// (a dial error, a pool timeout, a closed client).
//
// One case is left ambiguous and treated as not run: go-redis retries a
// call whose connection broke (Options.MaxRetries), so a dial error may
// follow an attempt that was written before Redis went away. That claim,
// if Redis kept it, waits out its lease.
func mayHaveRun(err error) bool {
	var (
		reply   redis.Error
		notSent *notSentError
		op      *net.OpError
	)
	switch {
	case errors.As(err, &reply), errors.As(err, &notSent), errors.Is(err, ErrOverloaded),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed),
		errors.As(err, &op) && op.Op == "dial":
		return false
	}
	return true
}

// abandon releases the claim a failed Begin may have made under owner.
func (s *Store) abandon(key any, stage, owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	_, _ = s.eval(ctx, s.release, append(evalArgs(s.release, key, 2), stage, owner), classNew)
}

func (s *Store) parseBegin(k Key, key any, stage, owner string, res []any, err error) (Claim, error) {
	if err != nil {
		return Claim{}, unavailable("begin", k, err)
	}
	if len(res) < 2 {
		return Claim{}, unavailable("begin", k, fmt.Errorf("unexpected reply %v", res))
	}
	status, _ := res[0].(string)
	attempt := int(toInt(res[1]))
	switch {
	case status == "ACQUIRED" && len(res) == 4:
		return Claim{
			Outcome:  Acquired,
			Attempt:  attempt,
			TakeOver: toInt(res[2]) == 1,
			Lease: &Lease{
				store: s, key: k, keyArg: key, stage: stage, owner: owner, attempt: attempt,
				expires: time.UnixMilli(toInt(res[3])),
			},
		}, nil
	case status == "COMPLETED" && len(res) == 3:
		result, _ := res[2].(string)
		return Claim{Outcome: Completed, Attempt: attempt, Result: []byte(result)}, nil
	case status == "IN_PROGRESS" && len(res) == 3:
		return Claim{}, &InProgressError{Attempt: attempt, RetryAfter: time.Duration(toInt(res[2])) * time.Millisecond}
	case status == "MISMATCH":
		return Claim{}, fmt.Errorf("begin %s stage %s: %w", k, stage, ErrMismatch)
	}
	return Claim{}, unavailable("begin", k, fmt.Errorf("unexpected reply %v", res))
}

func toInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// newOwner returns a random owner token, unique per claim.
func newOwner() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("idem: owner token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
