package container

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/fault"
)

// fakePatroni is a stateNodes with three Patroni nodes (postgres leading,
// postgres-2 its synchronous standby, postgres-3 a replica) answering
// oncepay-patroni's commands. A node taken down or cut off loses the
// leader key after promoteAfter looks at the cluster by the others; the
// synchronous standby then leads. A cut-off leader stays a primary until
// demoteAfter looks at it (never, if negative). A node that comes back
// streams from the new leader.
type fakePatroni struct {
	mu           sync.Mutex
	steps        []string
	leader, sync string
	down, cut    map[string]bool
	demoted      map[string]bool
	looks        int
	promoteAfter int
	demoteAfter  int
	roleLooks    int
}

func newFakePatroni() *fakePatroni {
	return &fakePatroni{leader: "postgres", sync: "postgres-2", down: map[string]bool{}, cut: map[string]bool{},
		demoted: map[string]bool{}, promoteAfter: 3, demoteAfter: 2}
}

func (p *fakePatroni) record(s string) {
	p.steps = append(p.steps, s)
}

func (p *fakePatroni) nodes(ctx context.Context, service string) ([]node, error) {
	if service != "postgres" {
		return nil, fmt.Errorf("service %s", service)
	}
	var out []node
	for _, n := range []string{"postgres", "postgres-2", "postgres-3"} {
		out = append(out, node{Name: n, Host: n, Ref: "c-" + n})
	}
	return out, nil
}

func (p *fakePatroni) exec(ctx context.Context, service string, n node, argv ...string) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(argv) < 2 || argv[0] != "oncepay-patroni" {
		return nil, fmt.Errorf("unexpected exec %v", argv)
	}
	if p.down[n.Name] {
		return nil, errors.New("container not running")
	}
	gone := p.down[p.leader] || p.cut[p.leader]
	switch argv[1] {
	case "cluster":
		if p.cut[n.Name] {
			return nil, errors.New("no store")
		}
		if gone && n.Name != p.leader {
			if p.looks++; p.looks >= p.promoteAfter {
				p.record("promote " + p.sync)
				p.leader, p.sync = p.sync, ""
			}
		}
		var ms []string
		for _, m := range []string{"postgres", "postgres-2", "postgres-3"} {
			if p.down[m] {
				continue
			}
			role := "replica"
			switch m {
			case p.leader:
				role = "leader"
			case p.sync:
				role = "sync_standby"
			}
			ms = append(ms, fmt.Sprintf(`{"name":%q,"role":%q,"state":"running"}`, m, role))
		}
		return fmt.Appendf(nil, `{"members":[%s]}`, strings.Join(ms, ",")), nil
	case "role":
		if p.cut[n.Name] && !p.demoted[n.Name] {
			if p.roleLooks++; p.demoteAfter >= 0 && p.roleLooks >= p.demoteAfter {
				p.demoted[n.Name] = true
			}
			return []byte("primary\n"), nil
		}
		if n.Name == p.leader && !p.cut[n.Name] {
			return []byte("primary\n"), nil
		}
		return []byte("replica\n"), nil
	case "write":
		p.record("write via " + n.Name + " to " + argv[2])
		if gone {
			return nil, errors.New("no primary")
		}
		return []byte{}, nil
	case "switchover":
		p.record(strings.Join(argv[1:], " ") + " on " + n.Name)
		if n.Name != p.leader || argv[2] != p.leader || argv[3] != p.sync {
			return nil, errors.New("412: leader name does not match")
		}
		p.leader, p.sync = argv[3], argv[2]
		return []byte("Successfully switched over\n"), nil
	case "streams":
		if n.Name == p.leader && !p.down[argv[2]] && !p.cut[argv[2]] {
			return []byte{}, nil
		}
		return nil, errors.New("exit status 1")
	}
	return nil, fmt.Errorf("unexpected exec %v", argv)
}

func (p *fakePatroni) takeDown(ctx context.Context, service string, n node) (func(context.Context) error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("down " + n.Name)
	p.down[n.Name] = true
	return func(context.Context) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.record("start " + n.Name)
		p.down[n.Name] = false
		return nil
	}, nil
}

func (p *fakePatroni) back(ctx context.Context, service, name string, old node) (node, error) {
	return old, nil
}

// cutOff is a partition's cut: the node loses the store and its peers.
func (p *fakePatroni) cutOff(ctx context.Context, victim node) (func(context.Context) error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("cut " + victim.Name)
	p.cut[victim.Name] = true
	return func(context.Context) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.record("heal " + victim.Name)
		p.cut[victim.Name] = false
		return nil
	}, nil
}

// patroniNodes adapts fakePatroni's takeDown to stateNodes.down.
type patroniNodes struct{ *fakePatroni }

func (p patroniNodes) down(ctx context.Context, service string, n node) (func(context.Context) error, error) {
	return p.takeDown(ctx, service, n)
}

func TestFailoverPostgres(t *testing.T) {
	t.Parallel()
	p := newFakePatroni()
	c, err := fakeFailover(patroniNodes{p}).FailoverPostgres(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Node != "postgres" || c.PromotedMS < 0 || c.RefusedMS < c.PromotedMS {
		t.Errorf("cost = %+v, want postgres taken down, a promotion, writes after it", c)
	}
	if want := "new primary postgres-2 (the sync standby was postgres-2); postgres rejoined as a replica: yes"; !strings.HasPrefix(c.Detail, want) {
		t.Errorf("detail %q, want it to start %q", c.Detail, want)
	}
	want := []string{"down postgres", "promote postgres-2", "write via postgres-2 to postgres,postgres-2,postgres-3", "start postgres"}
	if diff := cmp.Diff(want, p.steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// TestFailoverPostgresNoPromotion: a cluster in which nobody takes the
// leader over fails the fault, and the node is started again anyway.
func TestFailoverPostgresNoPromotion(t *testing.T) {
	t.Parallel()
	p := newFakePatroni()
	p.promoteAfter = 1 << 30
	c, err := fakeFailover(patroniNodes{p}).FailoverPostgres(context.Background(), 0)
	if err == nil || !strings.Contains(err.Error(), "no new primary") {
		t.Errorf("err = %v, want no new primary", err)
	}
	if c.PromotedMS != -1 || c.RefusedMS != -1 || p.steps[len(p.steps)-1] != "start postgres" {
		t.Errorf("cost %+v, steps %v: want nothing measured and the node started again", c, p.steps)
	}
}

func TestFailoverPostgresLagUnsupported(t *testing.T) {
	t.Parallel()
	_, err := fakeFailover(patroniNodes{newFakePatroni()}).FailoverPostgres(context.Background(), time.Second)
	if !errors.Is(err, fault.ErrUnsupported) {
		t.Errorf("err = %v, want fault.ErrUnsupported", err)
	}
}

func TestSwitchoverPostgres(t *testing.T) {
	t.Parallel()
	p := newFakePatroni()
	c, err := fakeFailover(patroniNodes{p}).SwitchoverPostgres(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Node != "postgres" || c.PromotedMS < 0 || c.RefusedMS < 0 || !strings.Contains(c.Detail, "new primary postgres-2; postgres rejoined as a replica: yes") {
		t.Errorf("cost = %+v", c)
	}
	if p.steps[0] != "switchover postgres postgres-2 on postgres" {
		t.Errorf("steps %v: want the switchover asked of the leader, to its sync standby", p.steps)
	}
}

// TestPartitionPostgres: the cut-off leader demotes itself (DemotedMS),
// the sync standby is promoted and takes writes, the node is healed after
// the fault's duration and streams from the new leader.
func TestPartitionPostgres(t *testing.T) {
	t.Parallel()
	p := newFakePatroni()
	f := fakeFailover(patroniNodes{p})
	c, err := f.partitionPostgres(context.Background(), 25*time.Second, p.cutOff)
	if err != nil {
		t.Fatal(err)
	}
	if c.Node != "postgres" || c.DemotedMS < 0 || c.PromotedMS < 0 || c.RefusedMS < 0 {
		t.Errorf("cost = %+v, want demoted, promoted and writes measured", c)
	}
	want := []string{"cut postgres", "promote postgres-2", "write via postgres-2 to postgres,postgres-2,postgres-3", "heal postgres"}
	if diff := cmp.Diff(want, p.steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if !strings.Contains(c.Detail, "cut off for 25s; new primary postgres-2; postgres rejoined as a replica: yes") {
		t.Errorf("detail %q", c.Detail)
	}
}

// TestPartitionPostgresNotDemoted: a cut-off leader still a primary (two
// primaries could take writes) fails the fault.
func TestPartitionPostgresNotDemoted(t *testing.T) {
	t.Parallel()
	p := newFakePatroni()
	p.demoteAfter = -1
	c, err := fakeFailover(patroniNodes{p}).partitionPostgres(context.Background(), 25*time.Second, p.cutOff)
	if err == nil || !strings.Contains(err.Error(), "postgres still a primary") {
		t.Errorf("err = %v, want the old leader still a primary", err)
	}
	if c.DemotedMS != -1 {
		t.Errorf("DemotedMS = %d, want -1", c.DemotedMS)
	}
}

// TestPartitionPostgresDemotedAfterTheHeal: a cut-off leader that demotes
// itself only after the cut ends (it was reachable again as a primary, a
// second one) fails the fault, and the cut lasts its duration, not until
// the demotion.
func TestPartitionPostgresDemotedAfterTheHeal(t *testing.T) {
	t.Parallel()
	p := newFakePatroni()
	p.demoteAfter = 200 // one look per 200 ms round: 40 s, past the 25 s cut
	f := fakeFailover(patroniNodes{p})
	t0 := f.now()
	var healedAt time.Duration
	cut := func(ctx context.Context, victim node) (func(context.Context) error, error) {
		heal, err := p.cutOff(ctx, victim)
		return func(ctx context.Context) error { healedAt = f.now().Sub(t0); return heal(ctx) }, err
	}
	c, err := f.partitionPostgres(context.Background(), 25*time.Second, cut)
	if err == nil || !strings.Contains(err.Error(), "postgres still a primary") {
		t.Errorf("err = %v, want the old leader still a primary at the heal", err)
	}
	if c.DemotedMS != -1 || healedAt < 25*time.Second || healedAt > 26*time.Second {
		t.Errorf("DemotedMS %d, healed after %s: want -1 and the heal at 25 s", c.DemotedMS, healedAt)
	}
}

// TestDockerPartitionPostgres: the leader's container is disconnected from
// its networks and connected again with its aliases.
func TestDockerPartitionPostgres(t *testing.T) {
	t.Parallel()
	d := NewDocker(DockerConfig{Project: "oncepay"})
	var steps []string
	cut, healed := false, false
	d.run = func(ctx context.Context, args ...string) ([]byte, error) {
		step := strings.Join(args, " ")
		switched := cut || healed
		switch {
		case args[0] == "ps":
			return []byte("aaaaaaaaaaaa1 postgres\nbbbbbbbbbbbb2 postgres-2\ncccccccccccc3 postgres-3\ndddddddddddd4 api-1\n"), nil
		case args[0] == "exec" && args[2] == "oncepay-patroni":
			switch args[3] {
			case "cluster":
				if switched {
					return []byte(`{"members":[{"name":"postgres-2","role":"leader","state":"running"}]}`), nil
				}
				return []byte(`{"members":[{"name":"postgres","role":"leader","state":"running"},{"name":"postgres-2","role":"sync_standby","state":"streaming"}]}`), nil
			case "role":
				if args[1] == "bbbbbbbbbbbb2" && switched || args[1] == "aaaaaaaaaaaa1" && !switched {
					return []byte("primary"), nil
				}
				return []byte("replica"), nil
			case "streams", "write":
				return nil, nil
			}
		case step == "inspect -f {{json .NetworkSettings.Networks}} aaaaaaaaaaaa1":
			steps = append(steps, "docker "+step)
			return []byte(`{"oncepay_default":{"Aliases":["oncepay-postgres-1","postgres","aaaaaaaaaaaa"]}}`), nil
		case args[0] == "inspect":
			return []byte("healthy\n"), nil
		case args[0] == "network" && args[1] == "disconnect":
			cut = true
		case args[0] == "network" && args[1] == "connect":
			cut, healed = false, true
		}
		steps = append(steps, "docker "+step)
		return nil, nil
	}
	f := fakeFailover(dockerNodes{d})
	c, err := f.partitionPostgres(context.Background(), 25*time.Second, d.disconnect)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"docker inspect -f {{json .NetworkSettings.Networks}} aaaaaaaaaaaa1",
		"docker network disconnect oncepay_default aaaaaaaaaaaa1",
		"docker network connect --alias oncepay-postgres-1 --alias postgres oncepay_default aaaaaaaaaaaa1",
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if c.Node != "postgres" || c.DemotedMS != 0 || c.PromotedMS != 0 {
		t.Errorf("cost = %+v, want postgres demoted and postgres-2 promoted at the first look", c)
	}
}

// TestPostgresKindsOnCompose: the Postgres kinds a compose backend carries
// out apply to compose's ha topology; the lagged failover (the local
// runtime's proxies) does not.
func TestPostgresKindsOnCompose(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{"failover-postgres": true, "switchover-postgres": true,
		"partition-postgres": true, "failover-postgres-lagged": false} {
		k, ok := fault.KindByName(name)
		if !ok {
			t.Fatalf("no kind %s", name)
		}
		if got := k.Applies("compose", "ha"); got != want {
			t.Errorf("%s applies on compose ha: %v, want %v", name, got, want)
		}
	}
	var _ fault.PostgresFailoverer = (*Docker)(nil)
}
