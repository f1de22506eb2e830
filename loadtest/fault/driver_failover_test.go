package fault_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// failoverBackend is a fakeBackend that is also a Failoverer.
type failoverBackend struct {
	*fakeBackend
	cost fault.Cost
}

func (b failoverBackend) FailoverRedis(context.Context) (fault.Cost, error) {
	return b.cost, b.record("failover redis")
}
func (b failoverBackend) MigrateSlot(context.Context) (fault.Cost, error) {
	return b.cost, b.record("migrate-slot")
}
func (b failoverBackend) KillQueueLeader(_ context.Context, q string, d time.Duration) (fault.Cost, error) {
	return b.cost, b.record(fmt.Sprintf("kill-leader %s %s", q, d))
}
func (b failoverBackend) PartitionQueueLeader(_ context.Context, q string, d time.Duration) (fault.Cost, error) {
	return b.cost, b.record(fmt.Sprintf("partition %s %s", q, d))
}

func (b failoverBackend) FailoverPostgres(_ context.Context, lag time.Duration) (fault.Cost, error) {
	return b.cost, b.record(fmt.Sprintf("failover postgres lag %s", lag))
}
func (b failoverBackend) SwitchoverPostgres(context.Context) (fault.Cost, error) {
	return b.cost, b.record("switchover postgres")
}
func (b failoverBackend) PartitionPostgres(_ context.Context, d time.Duration) (fault.Cost, error) {
	return b.cost, b.record(fmt.Sprintf("partition postgres %s", d))
}

func TestFailoverKindsRecordTheirCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind string
		want string // the backend call
	}{
		{"failover-redis", "failover redis"},
		{"migrate-slot", "migrate-slot"},
		{"kill-rabbitmq-leader", "kill-leader payments.charge 15s"},
		{"partition-rabbitmq", "partition payments.charge 20s"},
		{"failover-postgres", "failover postgres lag 0s"},
		{"failover-postgres-lagged", "failover postgres lag 2s"},
		{"switchover-postgres", "switchover postgres"},
		{"partition-postgres", "partition postgres 25s"},
	}
	for _, tt := range tests {
		k, ok := fault.KindByName(tt.kind)
		if !ok {
			t.Fatalf("no kind %s", tt.kind)
		}
		b := failoverBackend{&fakeBackend{}, fault.Cost{Node: "n-1", RefusedMS: 1234}}
		d, _, _ := newDriver(t, b, &fakeProber{busyAt: 1}, time.Second)
		e, err := d.Apply(context.Background(), fault.Step{Kind: k.Name, Action: k.Action, Target: k.Target})
		if err != nil {
			t.Fatalf("%s: %v", tt.kind, err)
		}
		if diff := cmp.Diff([]string{tt.want}, b.calls); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", tt.kind, diff)
		}
		if e.Cost == nil || *e.Cost != b.cost {
			t.Errorf("%s: event cost %v, want %v", tt.kind, e.Cost, b.cost)
		}
		if !e.Landed() {
			t.Errorf("%s: event %v did not land", tt.kind, e)
		}
	}
}

func TestFailoverNeedsAFailoverer(t *testing.T) {
	t.Parallel()
	d, _, _ := newDriver(t, &fakeBackend{}, &fakeProber{busyAt: 1}, time.Second)
	_, err := d.Do(context.Background(), fault.ActionFailover, "redis")
	if !errors.Is(err, fault.ErrUnsupported) {
		t.Errorf("err = %v, want ErrUnsupported", err)
	}
}

func TestFailoverOfTheWrongService(t *testing.T) {
	t.Parallel()
	b := failoverBackend{&fakeBackend{}, fault.Cost{}}
	d, _, _ := newDriver(t, b, &fakeProber{busyAt: 1}, time.Second)
	e, err := d.Do(context.Background(), fault.ActionKillLeader, "redis")
	if err == nil || e.Error == "" || len(b.calls) != 0 {
		t.Errorf("kill-leader of redis: err %v, event %v, calls %v; want a logged error and no call", err, e, b.calls)
	}
}

// slowFailover is a failoverBackend whose kill-leader returns only once
// release is closed (a killed node still booting).
type slowFailover struct {
	failoverBackend
	started, release chan struct{}
}

func (b slowFailover) KillQueueLeader(ctx context.Context, q string, d time.Duration) (fault.Cost, error) {
	close(b.started)
	<-b.release
	return b.failoverBackend.KillQueueLeader(ctx, q, d)
}

// TestFailoversOfOneClusterDoNotOverlap: a partition planned while the
// leader kill before it still waits for its node does not begin until that
// kill returned; a fault of the other cluster does not wait for it.
func TestFailoversOfOneClusterDoNotOverlap(t *testing.T) {
	t.Parallel()
	b := slowFailover{failoverBackend{&fakeBackend{}, fault.Cost{Node: "n-1"}}, make(chan struct{}), make(chan struct{})}
	d, _, _ := newDriver(t, b, &fakeProber{busyAt: 1}, time.Second)
	ctx := context.Background()
	kill := make(chan error)
	go func() {
		_, err := d.Apply(ctx, fault.Step{Kind: "kill-rabbitmq-leader", Action: fault.ActionKillLeader, Target: "rabbitmq"})
		kill <- err
	}()
	<-b.started
	partition := make(chan error)
	go func() {
		_, err := d.Apply(ctx, fault.Step{Kind: "partition-rabbitmq", Action: fault.ActionPartitionNode, Target: "rabbitmq"})
		partition <- err
	}()
	if _, err := d.Apply(ctx, fault.Step{Kind: "failover-redis", Action: fault.ActionFailover, Target: "redis"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-partition:
		t.Fatalf("the partition ran while the kill before it had not returned (err %v); calls %v", err, b.calls)
	case <-time.After(200 * time.Millisecond):
	}
	close(b.release)
	if err := <-kill; err != nil {
		t.Fatal(err)
	}
	if err := <-partition; err != nil {
		t.Fatal(err)
	}
	want := []string{"failover redis", "kill-leader payments.charge 15s", "partition payments.charge 20s"}
	if diff := cmp.Diff(want, b.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestFailoverWaitEndsWithTheContext: a fault waiting for its cluster
// returns when its context ends.
func TestFailoverWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	b := slowFailover{failoverBackend{&fakeBackend{}, fault.Cost{}}, make(chan struct{}), make(chan struct{})}
	d, _, _ := newDriver(t, b, &fakeProber{busyAt: 1}, time.Second)
	go d.Apply(context.Background(), fault.Step{Kind: "kill-rabbitmq-leader", Action: fault.ActionKillLeader, Target: "rabbitmq"})
	<-b.started
	defer close(b.release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.Apply(ctx, fault.Step{Kind: "partition-rabbitmq", Action: fault.ActionPartitionNode, Target: "rabbitmq"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
}
