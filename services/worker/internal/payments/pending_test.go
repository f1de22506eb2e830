package payments

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestPendingAndOldestPendingAge(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	if age, err := s.OldestPendingAge(ctx); err != nil || age != 0 {
		t.Fatalf("OldestPendingAge of an empty table = %s, %v; want 0", age, err)
	}
	for _, p := range []struct {
		id  string
		age time.Duration
	}{{"pay_new", 0}, {"pay_10m", 10 * time.Minute}, {"pay_1h", time.Hour}, {"pay_settled", 2 * time.Hour}, {"pay_20m", 20 * time.Minute}} {
		insertPending(t, pool, p.id)
		if _, err := pool.Exec(ctx, `UPDATE payments SET created_at = now() - make_interval(secs => $2) WHERE id = $1`, p.id, p.age.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
	if won, err := s.Settle(ctx, "pay_settled", Outcome{Status: Succeeded, PSPChargeID: "ch_1"}); err != nil || !won {
		t.Fatalf("Settle = %t, %v", won, err)
	}

	tests := []struct {
		olderThan time.Duration
		limit     int
		want      []string
	}{
		{5 * time.Minute, 10, []string{"pay_1h", "pay_20m", "pay_10m"}},
		{5 * time.Minute, 2, []string{"pay_1h", "pay_20m"}},
		{15 * time.Minute, 10, []string{"pay_1h", "pay_20m"}},
		{3 * time.Hour, 10, nil},
	}
	for _, tt := range tests {
		ps, err := s.Pending(ctx, tt.olderThan, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Pending(%s, %d) = %v, want %v", tt.olderThan, tt.limit, got, tt.want)
		}
	}
	age, err := s.OldestPendingAge(ctx)
	if err != nil || age < time.Hour || age > time.Hour+time.Minute {
		t.Errorf("OldestPendingAge = %s, %v; want about 1h (the settled payment does not count)", age, err)
	}
}

// A payment put off goes behind every payment due before it, however old
// it is, until its backoff ends; the backoff doubles per attempt up to the
// limit, and a settled payment is left alone.
func TestDeferPutsAPaymentBehindTheOthers(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	for _, p := range []struct {
		id  string
		age time.Duration
	}{{"pay_old", time.Hour}, {"pay_mid", 30 * time.Minute}, {"pay_new", 10 * time.Minute}} {
		insertPending(t, pool, p.id)
		if _, err := pool.Exec(ctx, `UPDATE payments SET created_at = now() - make_interval(secs => $2) WHERE id = $1`, p.id, p.age.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(limit int) []string {
		t.Helper()
		ps, err := s.Pending(ctx, time.Minute, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.ID)
		}
		return got
	}
	if got, want := ids(10), []string{"pay_old", "pay_mid", "pay_new"}; !slices.Equal(got, want) {
		t.Fatalf("before any Defer: %v, want %v", got, want)
	}
	// Put off for 0s: due again at once, but behind the payments due
	// since their creation.
	if err := s.Defer(ctx, "pay_old", 0, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(2), []string{"pay_mid", "pay_new"}; !slices.Equal(got, want) {
		t.Errorf("after deferring pay_old: first two %v, want %v", got, want)
	}
	if got, want := ids(10), []string{"pay_mid", "pay_new", "pay_old"}; !slices.Equal(got, want) {
		t.Errorf("after deferring pay_old: %v, want %v", got, want)
	}
	// A real backoff: not due at all until it ends.
	if err := s.Defer(ctx, "pay_mid", time.Minute, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(10), []string{"pay_new", "pay_old"}; !slices.Equal(got, want) {
		t.Errorf("pay_mid put off for a minute: %v, want %v", got, want)
	}

	backoff := func(id string) (int, time.Duration) {
		t.Helper()
		var n int
		var secs float64
		if err := pool.QueryRow(ctx, `SELECT reconcile_attempts, coalesce(extract(epoch FROM reconcile_at - now()), 0)::float8 FROM payments WHERE id = $1`, id).Scan(&n, &secs); err != nil {
			t.Fatal(err)
		}
		return n, time.Duration(secs * float64(time.Second)).Round(time.Second)
	}
	for i, want := range []time.Duration{2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
		if err := s.Defer(ctx, "pay_mid", time.Minute, 5*time.Minute); err != nil {
			t.Fatal(err)
		}
		if n, got := backoff("pay_mid"); n != i+2 || got != want {
			t.Errorf("defer %d: attempts %d, backoff %s; want %d, %s", i+2, n, got, i+2, want)
		}
	}
	if won, err := s.Settle(ctx, "pay_new", Outcome{Status: Succeeded, PSPChargeID: "ch_1"}); err != nil || !won {
		t.Fatalf("Settle = %t, %v", won, err)
	}
	if err := s.Defer(ctx, "pay_new", time.Minute, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n, _ := backoff("pay_new"); n != 0 {
		t.Errorf("a settled payment was put off: attempts %d", n)
	}
}
