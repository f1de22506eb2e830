package results

import (
	"fmt"
	"slices"
)

// Hist is a Prometheus histogram, summed over processes: cumulative counts
// by finite upper bound (seconds, ascending), the observations' sum
// (seconds) and count (which includes the +Inf bucket's).
type Hist struct {
	Bounds []float64 `json:"bounds"`
	Cum    []float64 `json:"cumulative"`
	Sum    float64   `json:"sum"`
	Count  float64   `json:"count"`
}

// Add returns h plus o; the bounds of a zero Hist take o's. Histograms with
// other bounds are not added (h is returned).
func (h Hist) Add(o Hist) Hist {
	if len(h.Bounds) == 0 {
		return Hist{Bounds: slices.Clone(o.Bounds), Cum: slices.Clone(o.Cum), Sum: o.Sum, Count: o.Count}
	}
	if !slices.Equal(h.Bounds, o.Bounds) {
		return h
	}
	out := Hist{Bounds: h.Bounds, Cum: slices.Clone(h.Cum), Sum: h.Sum + o.Sum, Count: h.Count + o.Count}
	for i := range out.Cum {
		out.Cum[i] += o.Cum[i]
	}
	return out
}

// Sub returns the observations made between before and h (a later reading
// of the same histogram); a before without bounds counts as empty.
func (h Hist) Sub(before Hist) Hist {
	if len(before.Bounds) == 0 {
		return h
	}
	neg := Hist{Bounds: before.Bounds, Cum: make([]float64, len(before.Cum)), Sum: -before.Sum, Count: -before.Count}
	for i, c := range before.Cum {
		neg.Cum[i] = -c
	}
	return h.Add(neg)
}

// Timing is the count, mean and p50 of observations, in milliseconds.
type Timing struct {
	N      int     `json:"n"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
}

// Timing is h's count, mean and p50; the p50 is interpolated linearly
// inside its bucket, as Prometheus's histogram_quantile does (the lowest
// bucket from 0; a p50 above every finite bound is the highest of them).
func (h Hist) Timing() Timing {
	if h.Count <= 0 {
		return Timing{}
	}
	t := Timing{N: int(h.Count), MeanMS: h.Sum / h.Count * 1000}
	rank := h.Count / 2
	lo, below := 0.0, 0.0
	for i, c := range h.Cum {
		if c >= rank && c > below {
			t.P50MS = (lo + (h.Bounds[i]-lo)*(rank-below)/(c-below)) * 1000
			return t
		}
		lo, below = h.Bounds[i], c
	}
	t.P50MS = lo * 1000
	return t
}

// Breakdown is where a latency round's time goes, from the api replicas'
// own histograms (their /metrics read before and after each slice, the
// differences summed over the round's slices) next to the floor's Begin and
// Complete timed apart.
type Breakdown struct {
	Begin    Timing `json:"begin"`    // boundary on: Begin as the api times it (idem_boundary_duration_seconds)
	Complete Timing `json:"complete"` // boundary on: Complete, likewise
	// FloorBegin and FloorComplete are the floor's two calls, timed by bench.
	FloorBegin    Timing `json:"floor_begin"`
	FloorComplete Timing `json:"floor_complete"`
	// PacedBegin and PacedComplete are the floor's calls made at one api
	// replica's rate in the round, so that Redis and the client idle
	// between them as they do for the api: what the two round trips cost
	// without the hot loop's warmth.
	PacedBegin    Timing `json:"paced_begin"`
	PacedComplete Timing `json:"paced_complete"`
	// ServerOn and ServerOff are POST /v1/payments as each copy's api times
	// it (http_request_duration_seconds): from the handler chain's start to
	// its end, without the client, the network and the server's accept.
	ServerOn  Timing `json:"server_on"`
	ServerOff Timing `json:"server_off"`
}

// Known reports whether the api's histograms were read.
func (b *Breakdown) Known() bool { return b != nil && b.ServerOn.N > 0 && b.ServerOff.N > 0 }

// Where is one line that splits a client-side overhead of overheadMS
// (on - off p50) into the api's own part (server-side p50, on - off) and
// the rest (client, network, accept), which is outside the api's timing,
// and sets the api's Begin + Complete (p50s) against the floor's, back to
// back and paced.
func (b *Breakdown) Where(overheadMS float64) string {
	server := b.ServerOn.P50MS - b.ServerOff.P50MS
	calls, floor := b.Begin.P50MS+b.Complete.P50MS, b.FloorBegin.P50MS+b.FloorComplete.P50MS
	return fmt.Sprintf("of the %+.2f ms overhead the client saw, %+.2f ms is inside the api (server-side p50, on - off) and %+.2f ms outside it "+
		"(k6, network, accept); the api's Begin + Complete take %.2f ms (p50s) where the floor's take %.2f ms back to back "+
		"and %.2f ms paced at one replica's rate",
		overheadMS, server, overheadMS-server, calls, floor, b.PacedBegin.P50MS+b.PacedComplete.P50MS)
}
