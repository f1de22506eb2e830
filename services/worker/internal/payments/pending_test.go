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
