// Package results is the data of one `make bench` run: every measurement,
// the machine it ran on, and the target ratios computed from them. The run
// writes it as results.json; the report renders it as markdown and plots.
package results

import (
	"encoding/json"
	"os"
	"slices"
	"time"

	"github.com/oncepay/oncepay/loadtest/bench/cpu"
	"github.com/oncepay/oncepay/loadtest/bench/peer"
)

// Results is one benchmark run.
type Results struct {
	Started  time.Time `json:"started"`
	Quick    bool      `json:"quick"`
	Machine  Machine   `json:"machine"`
	Commit   string    `json:"commit"` // git HEAD, "+dirty" when the tree had uncommitted changes
	Settings Settings  `json:"settings"`
	Go       *GoBench  `json:"go,omitempty"`
	E2E      *E2E      `json:"e2e,omitempty"`
	Overload *Overload `json:"overload,omitempty"`
	// Peer is the peer phase's results (loadtest/bench/peer) without its
	// cells, read from its results JSON when that phase ran.
	Peer    *peer.Results `json:"peer,omitempty"`
	Notes   []string      `json:"notes,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU        string     `json:"cpu"`
	Cores      int        `json:"cores"`
	MemoryGiB  float64    `json:"memory_gib"`
	Kernel     string     `json:"kernel"`
	Go         string     `json:"go"`
	Versions   []string   `json:"versions"`    // redis-server and k6
	LoadBefore [3]float64 `json:"load_before"` // before the run started anything: other people's work
}

// Settings are the knobs the run used.
type Settings struct {
	GoCount           int    `json:"go_count"`
	GoBenchtime       string `json:"go_benchtime"`
	PhaseSeconds      int    `json:"phase_seconds"`
	SustainSeconds    int    `json:"sustain_seconds"`
	Repeats           int    `json:"repeats"`
	SaturationVUs     int    `json:"saturation_vus"`
	LatencyRate       int    `json:"latency_rate"`
	LatencyPairs      int    `json:"latency_pairs"`         // on/off slice pairs per latency round
	LatencySlice      int    `json:"latency_slice_seconds"` // seconds of one latency slice
	WorkerConcurrency int    `json:"worker_concurrency"`
	PSPLatency        string `json:"psp_latency"`
	// Postgres is BENCH_PG: empty, or "patroni" when the e2e phase's
	// second copy ran with the boundary on against Postgres under Patroni
	// (synchronous replication) instead of with the boundary off.
	Postgres string `json:"postgres,omitempty"`
}

// GoBench holds the pkg/idem microbenchmarks: every run of each.
type GoBench struct {
	Runs      int                  `json:"runs"`
	Samples   map[string][]GoPoint `json:"samples"`   // by benchmark name without -N suffix
	Benchstat string               `json:"benchstat"` // benchstat's own table
}

// GoPoint is one benchmark line.
type GoPoint struct {
	NsPerOp     float64 `json:"ns_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	AllocsPerOp float64 `json:"allocs_per_op"`
}

// Median is the median of each field over the runs of benchmark name.
func (g *GoBench) Median(name string) GoPoint {
	var ns, by, al []float64
	for _, p := range g.Samples[name] {
		ns, by, al = append(ns, p.NsPerOp), append(by, p.BytesPerOp), append(al, p.AllocsPerOp)
	}
	return GoPoint{NsPerOp: Median(ns), BytesPerOp: Median(by), AllocsPerOp: Median(al)}
}

// E2E is the end-to-end benchmark on the bench runtime.
type E2E struct {
	RoundTrips RoundTrips `json:"round_trips"`
	Saturation []SatRound `json:"saturation"` // one per repeat
	Latency    []LatRound `json:"latency"`    // one per repeat
	// Sustained and SustainedOff are the runs of the copies with and
	// without the boundary, every rate tried, in order.
	Sustained      []Sustained `json:"sustained"`
	SustainedOff   []Sustained `json:"sustained_off,omitempty"`
	OffHonoured    bool        `json:"off_honoured"`            // the off copy made no Redis call
	VacuumSeconds  float64     `json:"vacuum_s"`                // VACUUM (ANALYZE) before the phases
	RewriteSeconds float64     `json:"aof_rewrite_s,omitempty"` // BGREWRITEAOF, waited for, before the phases
}

// RoundTrips are Redis commands per request, from INFO commandstats.
type RoundTrips struct {
	Fresh  Commands `json:"fresh"`  // new payments through the api with the boundary
	Replay Commands `json:"replay"` // replays of completed payments
	Off    Commands `json:"off"`    // new payments through the api without the boundary
	Charge Commands `json:"charge"` // the worker charging the fresh ones (stage charge)
}

// Commands counts the Redis commands of one phase. Redis counts the
// commands a script calls in commandstats too; those are not round trips
// and are kept apart in InScripts.
type Commands struct {
	Requests  int            `json:"requests"`   // requests (or payments charged) in the phase
	ByCommand map[string]int `json:"by_command"` // round trips: calls per command sent by a client
	InScripts map[string]int `json:"in_scripts"` // calls of the commands that lua/*.lua make, not round trips
	Total     int            `json:"total"`      // round trips: the sum of ByCommand
}

// PerRequest is round trips per request, Total/Requests.
func (c Commands) PerRequest() float64 { return float64(c.Total) / float64(max(c.Requests, 1)) }

// SetupCommands are sent once per new connection (go-redis's handshake) or
// by a readiness probe, not per request.
var SetupCommands = []string{"hello", "client|setinfo", "client|setname", "auth", "select", "ping"}

// Setup counts the connection handshakes and probes among the round trips.
func (c Commands) Setup() int {
	n := 0
	for _, name := range SetupCommands {
		n += c.ByCommand[name]
	}
	return n
}

// PerRequestWork is round trips per request without connection handshakes
// and probes: what each request itself costs.
func (c Commands) PerRequestWork() float64 {
	return float64(c.Total-c.Setup()) / float64(max(c.Requests, 1))
}

// Phase is one k6 phase against one copy's api.
type Phase struct {
	Name        string    `json:"name"`
	Accepted    float64   `json:"accepted_per_s"` // new payments answered 202
	Replayed    float64   `json:"replayed_per_s"`
	Failed      int       `json:"failed"`
	Dropped     int       `json:"dropped"`
	Charged     float64   `json:"charged_per_s"` // payments the workers settled per second during the phase
	P50MS       float64   `json:"p50_ms"`
	P99MS       float64   `json:"p99_ms"`
	CPU         cpu.Usage `json:"cpu"`
	DrainedIn   float64   `json:"drained_in_s"`           // time after the phase until no payment was pending
	AOFRewrites int       `json:"aof_rewrites,omitempty"` // Redis AOF rewrites that overlapped the phase
}

// SatRound is one side-by-side round at saturation.
type SatRound struct {
	On     Phase `json:"on"`  // the api at saturation while the workers charge
	Off    Phase `json:"off"` // the same, boundary off
	Replay Phase `json:"replay"`
}

// LatRound is one round at a fixed, unsaturated rate: short slices of the
// two copies, alternating (Pairs), with the floor measured right after.
// On and Off are the slices whose p50 is the median of their copy's.
type LatRound struct {
	On    Phase     `json:"on"`
	Off   Phase     `json:"off"`
	Pairs []LatPair `json:"pairs,omitempty"`
	Floor Floor     `json:"floor"`
	// Breakdown is where the round's time goes, from the api's own
	// histograms; nil when they could not be read.
	Breakdown *Breakdown `json:"breakdown,omitempty"`
}

// LatPair is the p50 of two back-to-back slices, one per copy.
type LatPair struct {
	OnP50MS  float64 `json:"on_p50_ms"`
	OffP50MS float64 `json:"off_p50_ms"`
}

// Overheads returns the round's paired p50 differences (on - off), or,
// for a round without pairs, the difference of On and Off.
func (l LatRound) Overheads() []float64 {
	if len(l.Pairs) == 0 {
		return []float64{l.On.P50MS - l.Off.P50MS}
	}
	d := make([]float64, len(l.Pairs))
	for i, p := range l.Pairs {
		d[i] = p.OnP50MS - p.OffP50MS
	}
	return d
}

// Floor is pkg/idem's own Begin+Complete on fresh keys, one call at a time,
// on the services' Redis: the two round trips the boundary cannot avoid.
type Floor struct {
	Ops   int     `json:"ops"`
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
}

// Sustained is one open-model run of the whole pipeline at Rate.
type Sustained struct {
	Rate         float64   `json:"rate"`
	Phase        Phase     `json:"phase"`
	PendingStart int       `json:"pending_start"`
	PendingEnd   int       `json:"pending_end"`
	BacklogSlope float64   `json:"backlog_slope_per_s"` // least squares over the second half of the run
	Pending      []float64 `json:"pending"`             // payments pending, every second
	Accepted     int       `json:"accepted"`
	Charged      int       `json:"charged"` // settled during the run
	// PGCommits is transactions committed (pg_stat_database.xact_commit,
	// every e2e database) per payment accepted, after the payments drained.
	PGCommits    float64  `json:"pg_commits_per_payment"`
	PSPDB        float64  `json:"psp_db_cores"`           // CPU of the psp database's backends (in the postgres group too)
	Autovacuumed []string `json:"autovacuumed,omitempty"` // "database.table" autovacuum finished during the run
	// RedisBytesPerPayment is the growth of Redis's used_memory per payment
	// accepted: the boundary record each payment leaves.
	RedisBytesPerPayment float64 `json:"redis_bytes_per_payment,omitempty"`
	OK                   bool    `json:"ok"`
	Why                  string  `json:"why,omitempty"`
}

// CPUPerCharged is the pipeline's CPU (machine busy less Others) in ms per
// payment charged in the run of secs seconds, without the psp and its
// database's backends if withoutPSP; 0 when nothing was charged.
func (s Sustained) CPUPerCharged(secs float64, withoutPSP bool) float64 {
	if s.Charged == 0 {
		return 0
	}
	cores := s.Phase.CPU.MachineBusy - s.Phase.CPU.Others
	if withoutPSP {
		cores -= s.Phase.CPU.Cores["psp"] + s.PSPDB
	}
	return cores * secs * 1000 / float64(s.Charged)
}

// Save writes r as indented JSON.
func (r *Results) Save(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Load reads a results.json.
func Load(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	var r Results
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	return &r, err
}

// Median returns the median of xs (the mean of the middle two for an even
// count), 0 for none. It does not change xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s, n := slices.Sorted(slices.Values(xs)), len(xs)
	return (s[(n-1)/2] + s[n/2]) / 2
}
