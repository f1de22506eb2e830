package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/loadtest/bench/results"
)

// TestRewriteAOFWaits: rewriteAOF returns only once Redis's AOF rewrite has
// ended, whether it started the rewrite or found one of Redis's own already
// running, and notes a Redis that does not answer instead of waiting.
// A private Redis with AOF on (testenv.StartRedis), filled so that a
// rewrite takes a while.
func TestRewriteAOFWaits(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedis(t)
	rdb := srv.Client()
	ctx := context.Background()
	value := strings.Repeat("x", 200)
	for i := 0; i < 200_000; i += 10_000 {
		p := rdb.Pipeline()
		for j := i; j < i+10_000; j++ {
			p.Set(ctx, fmt.Sprintf("idem:v1:{test:%d}", j), value, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	b := &bench{out: io.Discard, res: &results.Results{}, cl: &clients{rdb: rdb}}
	state := func() redisState {
		t.Helper()
		s, ok := b.redisNow(ctx)
		if !ok {
			t.Fatal("Redis did not answer INFO")
		}
		return s
	}

	// ended checks that rewriteAOF returned after exactly one rewrite
	// since before, and none running or scheduled.
	ended := func(t *testing.T, before redisState) {
		t.Helper()
		after := state()
		if after.Rewriting || after.Scheduled {
			t.Errorf("rewriteAOF returned while Redis was still rewriting: %+v", after)
		}
		if after.AOFRewrites != before.AOFRewrites+1 {
			t.Errorf("aof_rewrites %d -> %d, want one rewrite", before.AOFRewrites, after.AOFRewrites)
		}
	}

	t.Run("started by bench", func(t *testing.T) {
		before := state()
		b.rewriteAOF(ctx)
		ended(t, before)
	})
	t.Run("one already running", func(t *testing.T) {
		before := state()
		if err := rdb.BgRewriteAOF(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if !state().Rewriting {
			t.Fatal("no rewrite running right after BGREWRITEAOF: the data set is too small for this test")
		}
		b.rewriteAOF(ctx)
		ended(t, before) // the one already running, waited for
	})
	if len(b.res.Notes) > 0 {
		t.Errorf("notes for rewrites that went well: %q", b.res.Notes)
	}

	t.Run("Redis not answering", func(t *testing.T) {
		srv.Stop()
		defer srv.Start()
		start := time.Now()
		b.rewriteAOF(ctx)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("rewriteAOF took %s against a stopped Redis", took)
		}
		if len(b.res.Notes) != 1 || !strings.Contains(b.res.Notes[0], "BGREWRITEAOF") {
			t.Errorf("notes %q, want one saying BGREWRITEAOF failed", b.res.Notes)
		}
	})
}
