package server

import (
	"fmt"
	"hash/fnv"
	"sync"
	"time"
)

// Faults are per-request probabilities of misbehaving. Whether a request
// fails is a pure function of the seed, the request body and how many times
// that body was sent before, so a test run is repeatable and a retried
// request eventually gets through.
type Faults struct {
	Seed        uint64
	Error500    float64 // 500 with an error body
	RateLimit   float64 // 429 with Retry-After
	InFlight402 float64 // OpenRouter's 402 in_flight_budget_exhausted with Retry-After
	Drop        float64 // connection closed before any response
	Hang        float64 // no response until HangFor passes or the client gives up
	BadJSON     float64 // 200 with a body that is not JSON
	Truncate    float64 // body or stream cut off mid-way
	StreamError float64 // a stream that ends in an error event (OpenRouter style)
	// RetryAfter is the wait 429 and 402 ask for (1s).
	RetryAfter time.Duration
	// HangFor bounds a hang; 0 hangs until the client gives up.
	HangFor time.Duration
	// HangAll makes every generation hang as Hang does while /health and
	// /v1/models still answer: a server whose scheduler is stuck, which
	// the rates, adding up to less than 1, cannot make.
	HangAll bool
}

type fault int

const (
	noFault fault = iota
	fault500
	fault429
	fault402
	faultDrop
	faultHang
	faultBadJSON
	faultTruncate
	faultStreamError
)

var faultNames = [...]string{"", "500", "429", "402", "drop", "hang", "bad_json", "truncate", "stream_error"}

func (f fault) String() string { return faultNames[f] }

func (f *Faults) rates() []float64 {
	return []float64{f.Error500, f.RateLimit, f.InFlight402, f.Drop, f.Hang, f.BadJSON, f.Truncate, f.StreamError}
}

func (f *Faults) validate() error {
	sum := 0.0
	for _, r := range f.rates() {
		if r < 0 {
			return fmt.Errorf("sim server: negative fault rate %v", r)
		}
		sum += r
	}
	if sum >= 1 {
		return fmt.Errorf("sim server: fault rates add up to %.2f; nothing would succeed", sum)
	}
	if f.RetryAfter <= 0 {
		f.RetryAfter = time.Second
	}
	return nil
}

// injector decides faults and counts them.
type injector struct {
	cfg      Faults
	mu       sync.Mutex
	attempts map[uint64]uint32
	counts   map[string]int64
}

func newInjector(cfg Faults) *injector {
	return &injector{cfg: cfg, attempts: map[uint64]uint32{}, counts: map[string]int64{}}
}

func (in *injector) enabled() bool {
	if in.cfg.HangAll {
		return true
	}
	for _, r := range in.cfg.rates() {
		if r > 0 {
			return true
		}
	}
	return false
}

// decide returns the fault for this sending of body.
func (in *injector) decide(body []byte) fault {
	if !in.enabled() {
		return noFault
	}
	if in.cfg.HangAll {
		in.mu.Lock()
		in.counts[faultHang.String()]++
		in.mu.Unlock()
		return faultHang
	}
	h := fnv.New64a()
	h.Write(body)
	key := h.Sum64()
	in.mu.Lock()
	n := in.attempts[key]
	in.attempts[key] = n + 1
	in.mu.Unlock()

	u := uniform(in.cfg.Seed ^ key ^ uint64(n)*0x9e3779b97f4a7c15)
	for i, r := range in.cfg.rates() {
		if u < r {
			f := fault(i + 1)
			in.mu.Lock()
			in.counts[f.String()]++
			in.mu.Unlock()
			return f
		}
		u -= r
	}
	return noFault
}

func (in *injector) injected() map[string]int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string]int64, len(in.counts))
	for k, v := range in.counts {
		out[k] = v
	}
	return out
}

// uniform maps a seed to [0, 1) (one splitmix64 step).
func uniform(z uint64) float64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}
