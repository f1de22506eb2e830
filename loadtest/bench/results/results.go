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
)

// Results is one benchmark run.
type Results struct {
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Quick    bool          `json:"quick"`
	Machine  Machine       `json:"machine"`
	Commit   string        `json:"commit"` // git HEAD, "+dirty" when the tree had uncommitted changes
	Settings Settings      `json:"settings"`
	Go       *GoBench      `json:"go,omitempty"`
	Ceilings *Ceilings     `json:"ceilings,omitempty"`
	Coloc    *Colocated    `json:"colocated,omitempty"`
	E2E      *E2E          `json:"e2e,omitempty"`
	Load     []LoadSample  `json:"load"` // load average at the start of every phase
	Notes    []string      `json:"notes,omitempty"`
	Elapsed  time.Duration `json:"elapsed_ns"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU       string   `json:"cpu"`
	Cores     int      `json:"cores"`
	MemoryGiB float64  `json:"memory_gib"`
	Kernel    string   `json:"kernel"`
	Go        string   `json:"go"`
	Versions  []string `json:"versions"` // redis, postgres, rabbitmq, k6, pgbench
	// LoadBefore is the load average before the run started anything: other
	// people's work on the shared machine.
	LoadBefore [3]float64 `json:"load_before"`
}

// Settings are the knobs the run used.
type Settings struct {
	GoCount           int    `json:"go_count"`
	GoBenchtime       string `json:"go_benchtime"`
	StepSeconds       int    `json:"step_seconds"`
	PhaseSeconds      int    `json:"phase_seconds"`
	SustainSeconds    int    `json:"sustain_seconds"`
	Repeats           int    `json:"repeats"`
	SaturationVUs     int    `json:"saturation_vus"`
	LatencyRate       int    `json:"latency_rate"`
	WorkerConcurrency int    `json:"worker_concurrency"`
	PSPLatency        string `json:"psp_latency"`
}

// LoadSample is the load average when a phase started.
type LoadSample struct {
	Phase string     `json:"phase"`
	At    time.Time  `json:"at"`
	Load  [3]float64 `json:"load"`
}

// GoBench holds the pkg/idem microbenchmarks: every run and the medians.
type GoBench struct {
	Runs      int                  `json:"runs"`
	Medians   map[string]GoMedian  `json:"medians"`   // by benchmark name without -N suffix
	Samples   map[string][]GoPoint `json:"samples"`   // every run
	Benchstat string               `json:"benchstat"` // benchstat's own table
}

// GoPoint is one benchmark line.
type GoPoint struct {
	NsPerOp     float64 `json:"ns_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	AllocsPerOp float64 `json:"allocs_per_op"`
}

// GoMedian is the median of every field over the runs.
type GoMedian struct {
	GoPoint
	OpsPerSec float64 `json:"ops_per_sec"`
}

// Ceilings are the stand-alone maxima of Redis and Postgres for oncepay's
// own work, each the median of Repeats runs.
type Ceilings struct {
	RedisBegin    []float64 `json:"redis_begin_ops"`    // redis-benchmark EVALSHA begin, requests/s
	RedisComplete []float64 `json:"redis_complete_ops"` // redis-benchmark EVALSHA complete, requests/s
	PGInsert      []float64 `json:"pg_insert_tps"`      // pgbench, the api's transaction
	PGInsert4RT   []float64 `json:"pg_insert_4rt_tps"`  // pgbench, the api's transaction before 87b740b (BEGIN, 2 INSERTs, COMMIT)
	PGUpdate      []float64 `json:"pg_update_tps"`      // pgbench, the worker's compare-and-set
	PGClients     int       `json:"pg_clients"`
	RedisClients  int       `json:"redis_clients"`
}

// RedisPaymentsPerSec is the Redis ceiling in payments/s: one begin and one
// complete per payment.
func (c Ceilings) RedisPaymentsPerSec() float64 {
	b, k := Median(c.RedisBegin), Median(c.RedisComplete)
	if b == 0 || k == 0 {
		return 0
	}
	return 1 / (1/b + 1/k)
}

// Colocated is the colocated ceiling search: every stage's bare work at X
// payments/s at once, X raised until a stage falls behind.
type Colocated struct {
	Runs []ColocRun `json:"runs"`
}

// ColocRun is one search.
type ColocRun struct {
	Steps   []ColocStep `json:"steps"`
	Ceiling float64     `json:"ceiling"` // highest X at which every stage kept up
	Knee    float64     `json:"knee"`    // lowest X at which a stage fell behind (0: none did)
}

// ColocStep is one X.
type ColocStep struct {
	Rate   float64          `json:"rate"`
	Stages map[string]Stage `json:"stages"` // http, redis, pg_insert, pg_update, amqp
	CPU    cpu.Usage        `json:"cpu"`
	KeptUp bool             `json:"kept_up"`
	Behind []string         `json:"behind,omitempty"` // the stages that fell behind
	Load   [3]float64       `json:"load"`
}

// Stage is what one stage achieved in a step.
type Stage struct {
	Achieved float64 `json:"achieved"` // per second
	LagMS    float64 `json:"lag_ms"`   // schedule lag: p99 (Go stages), average (pgbench), none (k6)
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	KeptUp   bool    `json:"kept_up"`
	Detail   string  `json:"detail,omitempty"`
}

// Ceiling is the median ceiling over the searches.
func (c Colocated) Ceiling() float64 {
	var xs []float64
	for _, r := range c.Runs {
		xs = append(xs, r.Ceiling)
	}
	return Median(xs)
}

// Knee is the median knee over the searches that found one.
func (c Colocated) Knee() float64 {
	var xs []float64
	for _, r := range c.Runs {
		if r.Knee > 0 {
			xs = append(xs, r.Knee)
		}
	}
	return Median(xs)
}

// E2E is the end-to-end benchmark on the bench runtime.
type E2E struct {
	RoundTrips RoundTrips  `json:"round_trips"`
	Saturation []SatRound  `json:"saturation"` // one per repeat
	Latency    []LatRound  `json:"latency"`    // one per repeat
	Sustained  []Sustained `json:"sustained"`  // every rate tried, in order
	// SustainedOff are runs of the boundary-off copy near the rate where
	// the boundary's copy stopped holding: a reference, not a target.
	SustainedOff []Sustained `json:"sustained_off,omitempty"`
	OffHonoured  bool        `json:"off_honoured"` // the off variant made no Redis call
	// VacuumSeconds is the time spent in VACUUM (ANALYZE) of the e2e tables
	// before the measured phases.
	VacuumSeconds float64 `json:"vacuum_s"`
	// RewriteSeconds is the time spent rewriting Redis's AOF (BGREWRITEAOF,
	// waited for) before the measured phases; 0 in runs before it existed.
	RewriteSeconds float64 `json:"aof_rewrite_s,omitempty"`
	// Baseline is set in an A/B run (BENCH_BASELINE_API): the "off" phases
	// ran that api binary with the boundary on, not the boundary off.
	Baseline string `json:"baseline,omitempty"`
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
func (c Commands) PerRequest() float64 {
	if c.Requests == 0 {
		return 0
	}
	return float64(c.Total) / float64(c.Requests)
}

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
	if c.Requests == 0 {
		return 0
	}
	return float64(c.Total-c.Setup()) / float64(c.Requests)
}

// Phase is one k6 phase against the api.
type Phase struct {
	Name      string     `json:"name"`
	Accepted  float64    `json:"accepted_per_s"` // new payments answered 202
	Replayed  float64    `json:"replayed_per_s"`
	Failed    int        `json:"failed"`
	Dropped   int        `json:"dropped"`
	Charged   float64    `json:"charged_per_s"` // payments the workers settled per second during the phase
	P50MS     float64    `json:"p50_ms"`
	P99MS     float64    `json:"p99_ms"`
	CPU       cpu.Usage  `json:"cpu"`
	Load      [3]float64 `json:"load"`
	DrainedIn float64    `json:"drained_in_s"` // time after the phase until no payment was pending
	// AOFRewrites is how many Redis AOF rewrites overlapped the phase: each
	// forks Redis and serialises the whole dataset, seconds of a core here.
	AOFRewrites int `json:"aof_rewrites,omitempty"`
}

// SatRound is one side-by-side round at saturation.
type SatRound struct {
	On     Phase `json:"on"`  // the api at saturation while the workers charge
	Off    Phase `json:"off"` // the same, boundary off
	Replay Phase `json:"replay"`
	// OnAlone and OffAlone are the same variants' stages measured one at a
	// time (nil in runs from before they existed).
	OnAlone  *Alone `json:"on_alone,omitempty"`
	OffAlone *Alone `json:"off_alone,omitempty"`
}

// Alone is one variant's two stages measured one at a time, so that neither
// takes cores from the other: the api at saturation with the variant's
// workers stopped, then the workers alone charging the backlog that phase
// left, with no requests arriving.
type Alone struct {
	API   Phase `json:"api"`
	Drain Drain `json:"drain"`
}

// Drain is a variant's workers charging a backlog while nothing else runs.
type Drain struct {
	Backlog int `json:"backlog"` // payments pending when the workers started
	// Charged is payments settled per second while the settled count went
	// from 10% to 90% of the backlog: the workers' start and the last
	// stragglers are left out.
	Charged float64 `json:"charged_per_s"`
	Seconds float64 `json:"seconds"` // from starting the workers until no payment was pending
	// CPU is over CPUSpan seconds, from the workers answering /readyz until
	// no payment was pending; Settled is what they settled in that span.
	CPU     cpu.Usage `json:"cpu"`
	CPUSpan float64   `json:"cpu_span_s"`
	Settled int       `json:"settled"`
	// AOFRewrites: Redis AOF rewrites that overlapped the drain (see Phase).
	AOFRewrites int `json:"aof_rewrites,omitempty"`
}

// CPUPerPayment is the CPU that oncepay's processes and servers used per
// payment settled, in milliseconds (other people's work left out; 0 when
// nothing was settled).
func (d Drain) CPUPerPayment() float64 {
	if d.Settled == 0 {
		return 0
	}
	return (d.CPU.MachineBusy - d.CPU.Others) * d.CPUSpan * 1000 / float64(d.Settled)
}

// CPUPerRequest is the CPU that oncepay's processes, its servers and k6 used
// per request answered in the phase, in milliseconds (other people's work
// left out; 0 when no request was answered).
func (p Phase) CPUPerRequest() float64 {
	n := p.Accepted + p.Replayed
	if n == 0 {
		return 0
	}
	return (p.CPU.MachineBusy - p.CPU.Others) * 1000 / n
}

// LatRound is one side-by-side round at a fixed, unsaturated rate.
type LatRound struct {
	On  Phase `json:"on"`
	Off Phase `json:"off"`
}

// Sustained is one open-model run of the whole pipeline at Rate.
type Sustained struct {
	Rate         float64   `json:"rate"`
	Phase        Phase     `json:"phase"`
	PendingStart int       `json:"pending_start"`
	PendingEnd   int       `json:"pending_end"`
	PendingMax   int       `json:"pending_max"`
	BacklogSlope float64   `json:"backlog_slope_per_s"` // least squares over the second half of the run
	Pending      []float64 `json:"pending"`             // sampled every SampleEvery
	SampleEvery  float64   `json:"sample_every_s"`
	Accepted     int       `json:"accepted"`
	Charged      int       `json:"charged"` // settled during the run
	// PGCommits is Postgres transactions committed per payment accepted
	// during the run, over the api's, the workers' and the psp's databases
	// (pg_stat_database.xact_commit, counted after the run's payments drained).
	PGCommits float64 `json:"pg_commits_per_payment"`
	DrainedIn float64 `json:"drained_in_s"`
	// Rewriting says, per sample of Pending, whether Redis was rewriting its
	// AOF at that moment (nil in runs from before it was recorded).
	Rewriting []bool `json:"aof_rewriting,omitempty"`
	// Vacuuming says, per sample, whether a VACUUM ran in the end-to-end
	// databases (pg_stat_progress_vacuum); Autovacuumed lists the tables
	// ("database.table") that autovacuum finished during the run.
	Vacuuming    []bool   `json:"vacuuming,omitempty"`
	Autovacuumed []string `json:"autovacuumed,omitempty"`
	// RedisBytesPerPayment is Redis's used_memory after the run less before,
	// per payment accepted: the boundary record each payment leaves (kept
	// for the record TTL). RecordEncoding is Redis's encoding of a record
	// (OBJECT ENCODING: listpack or hashtable).
	RedisBytesPerPayment float64 `json:"redis_bytes_per_payment,omitempty"`
	RecordEncoding       string  `json:"record_encoding,omitempty"`
	OK                   bool    `json:"ok"`
	Why                  string  `json:"why,omitempty"`
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
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Median returns the median of xs (the mean of the middle two for an even
// count), 0 for none. It does not change xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
