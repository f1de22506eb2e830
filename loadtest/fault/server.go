package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// ServerDeps are what the fault driver's HTTP interface needs.
type ServerDeps struct {
	Logger *slog.Logger
	Driver *Driver
	Events *EventLog
	// APIs and Workers are the replica names a plan kills in turn.
	APIs, Workers []string
	// Runtime (local, compose, kind) picks the kinds a plan may hold.
	Runtime string
	// Topology (single, ha) picks them too: ha plans hit the clusters.
	Topology string
	// MatrixKinds, if set, are the only kinds the matrix plan holds.
	MatrixKinds []string
}

// NewServer returns the fault driver's HTTP interface:
//
//	GET  /v1/schedule?duration=180s&seed=1  the plan for a run (Plan), {"steps":[...]}
//	GET  /v1/schedule?plan=matrix&seed=1    every kind once (MatrixPlan), {"steps":[...],"duration_ms":...}
//	POST /v1/faults {"action","target"}     apply one fault now (a Step: also "kind", "for_ms", "delay_ms");
//	                                        200 with the event, 500 with the event if it failed
//	GET  /v1/events                          every event so far, {"events":[...]}
//	GET  /livez, /readyz                     200
func NewServer(d ServerDeps) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /v1/schedule", handleSchedule(d))
	mux.Handle("POST /v1/faults", handleFault(d.Logger, d.Driver))
	mux.Handle("GET /v1/events", handleEvents(d.Events))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.Handle("GET /livez", ok)
	mux.Handle("GET /readyz", ok)
	return mux
}

func handleSchedule(d ServerDeps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var seed uint64
		if s := q.Get("seed"); s != "" {
			if _, err := fmt.Sscan(s, &seed); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "seed must be a non-negative integer"})
				return
			}
		}
		if q.Get("plan") == "matrix" {
			steps, load, err := MatrixPlan(MatrixConfig{Runtime: d.Runtime, Topology: d.Topology, APIs: d.APIs, Workers: d.Workers, Seed: seed, Kinds: d.MatrixKinds})
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"steps": steps, "duration_ms": load.Milliseconds()})
			return
		}
		dur, err := time.ParseDuration(q.Get("duration"))
		if err != nil || dur <= 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "duration must be a positive duration like 180s"})
			return
		}
		every, _ := time.ParseDuration(q.Get("kill_every"))
		steps, err := Plan(PlanConfig{Duration: dur, APIs: d.APIs, Workers: d.Workers, KillEvery: every, Seed: seed, Runtime: d.Runtime, Topology: d.Topology})
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string][]Step{"steps": steps})
	})
}

func handleFault(log *slog.Logger, drv *Driver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Step
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.Target == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": `body must be {"action": "kill|restart|flush|pause|delete-queue|outage|latency|partition|reset_peer|slow", "target": "...", "kind": "...", "for_ms": 0, "delay_ms": 0}`})
			return
		}
		e, err := drv.Apply(r.Context(), req)
		switch {
		case errors.Is(err, ErrUnknownAction), errors.Is(err, ErrUnsupported):
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		case err != nil:
			log.Error("fault failed", "action", req.Action, "target", req.Target, "err", err)
			writeJSON(w, http.StatusInternalServerError, e)
		default:
			writeJSON(w, http.StatusOK, e)
		}
	})
}

func handleEvents(events *EventLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string][]Event{"events": events.Events()})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
