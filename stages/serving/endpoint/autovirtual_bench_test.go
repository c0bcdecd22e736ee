package endpoint

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// vShape is a workload for BenchmarkAutoVirtual: answers' mean length and
// lognormal sigma, and the KV cache's size in tokens.
type vShape struct {
	name  string
	mean  int
	sigma float64
	kv    int
}

// vCase is a client: a fixed concurrency, or auto with or without the
// server's metrics and streamed token counts.
type vCase struct {
	name              string
	fixed             int
	metrics, streamed bool
}

// BenchmarkAutoVirtual runs eaglet's concurrency: auto (the limiter,
// kvControl and kvPredict, deciding as in a run) against server.Virtual,
// the simulator's SGLang scheduler stepped in simulated time: no HTTP, no
// wall clock, deterministic, so a change to the controller is measured in
// seconds rather than BenchmarkScheduling's minutes of noise. The shape
// "issue" is BenchmarkScheduling's and BenchmarkSchedulerFrontier's (900
// prompts, answers of 3,500 tokens on average, lognormal sigma 1, at most
// 16,384, a 159,277-token cache, 50 tokens/s a sequence, prefill 8,000
// tokens/s); the others vary the mean, the sigma and the cache, to check
// that auto is not tuned to one shape. Each case is the mean of five draws
// of the answers (the frontier's seeds). The limiter's clock runs at 50
// times the simulated one, as BenchmarkScheduling's server does, so its
// 20 ms between decisions and 50 ms between metrics reads are a second
// and 2.5 s of simulated time there as here. Auto cases: with metrics
// (the serverLoad the scheduler's counters make, as /metrics gives it),
// streamed (exact token counts each step) or not (nothing until the
// answer ends); without metrics (latencies, completions and streams going
// silent). Each auto case reports its speed and preemptions over the
// best fixed concurrency's of the same shape (best-speed, best-preemptions)
// when the fixed cases ran in the same benchmark.
//
//	go test ./stages/serving/endpoint -run '^$' -bench 'AutoVirtual/issue/' -benchtime 1x
func BenchmarkAutoVirtual(b *testing.B) {
	shapes := []vShape{
		{"issue", 3500, 1, 159_277},
		{"mean1000", 1000, 1, 159_277},
		{"mean8000", 8000, 1, 159_277},
		{"sigma0.5", 3500, 0.5, 159_277},
		{"sigma1.5", 3500, 1.5, 159_277},
		{"kv2x", 3500, 1, 2 * 159_277},
		{"kv0.5x", 3500, 1, 159_277 / 2},
	}
	var cases []vCase
	for _, n := range []int{16, 32, 38, 45, 64, 96, 150, 256} {
		cases = append(cases, vCase{name: fmt.Sprintf("fixed%d", n), fixed: n, streamed: true})
	}
	cases = append(cases,
		vCase{name: "auto-metrics", metrics: true, streamed: true},
		vCase{name: "auto-latency", streamed: true},
		vCase{name: "auto-metrics-unstreamed", metrics: true},
		vCase{name: "auto-latency-unstreamed"},
	)
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			var best vResult
			for _, c := range cases {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						var sum vResult
						const seeds = 5
						for seed := range uint64(seeds) {
							r := autoVirtualRun(sh, seed+1, c)
							sum.tokensPerS += r.tokensPerS / seeds
							sum.preemptions += r.preemptions / seeds
							sum.running += r.running / seeds
							sum.kv += r.kv / seeds
						}
						b.ReportMetric(sum.tokensPerS, "sim-tokens/s")
						b.ReportMetric(sum.preemptions, "preemptions")
						b.ReportMetric(sum.running, "mean-running")
						b.ReportMetric(sum.kv, "mean-kv-usage")
						if c.fixed > 0 && sum.tokensPerS > best.tokensPerS {
							best = sum
						}
						if c.fixed == 0 && best.tokensPerS > 0 {
							b.ReportMetric(sum.tokensPerS/best.tokensPerS, "best-speed")
							b.ReportMetric(sum.preemptions/max(best.preemptions, 1), "best-preemptions")
						}
					}
				})
			}
		})
	}
}

type vResult struct {
	tokensPerS, preemptions, running, kv float64
}

// vTimeScale is how much faster than the limiter's clock the simulated
// one runs: BenchmarkScheduling's server runs at 50 times real time.
const vTimeScale = 50

// autoVirtualRun sends the shape's 900 prompts in the frontier's order
// through a limiter as c sets it up, stepping the scheduler 0.25 s of
// simulated time at a time (the HTTP server's 5 ms tick at 50 times real
// time) until every answer is out. Requests take free slots between
// steps; finished ones end and release theirs; a metrics read the
// limiter asked for runs after the step, reading the scheduler's
// counters as /metrics shows them.
func autoVirtualRun(sh vShape, seed uint64, c vCase) vResult {
	const step, maxTokens = 0.25, 16384
	model := sim.New(sim.Config{Seed: seed, MeanTokens: sh.mean, Sigma: sh.sigma, MaxLen: maxTokens})
	var prompts []sim.Prompt
	for _, ds := range []string{"a", "b", "c"} {
		for i := range 300 {
			prompts = append(prompts, sim.Prompt{Messages: []conv.Message{{Role: conv.User,
				Content: fmt.Sprintf("Dataset %s, question %d: explain idea %d in detail.", ds, i, i*7)}}})
		}
	}
	v := server.NewVirtual(server.Config{Speed: 50, PrefillSpeed: 8000, KVTokens: sh.kv, MaxRunning: 256, Slowdown: 0.002 * 256})
	simT := 0.0
	epoch := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return epoch.Add(time.Duration(simT / vTimeScale * float64(time.Second))) }

	var l *limiter
	if c.fixed > 0 {
		l = newLimiter(c.fixed, c.fixed, false)
	} else {
		l = newLimiter(16, 400, true)
	}
	l.now, l.start, l.streams = clock, clock(), c.streamed
	var reads []func()
	if c.fixed == 0 && c.metrics {
		w := newLoadWatch(func() []string { return nil }, false, loadEvery, nil)
		w.now = clock
		w.spawn = func(f func()) { reads = append(reads, f) }
		w.read = func() (serverLoad, error) {
			st := v.Stats()
			return serverLoad{running: float64(st.Running), queued: float64(st.Queued),
				usage: float64(st.KVUsed) / float64(sh.kv), preempted: float64(st.Retractions), capacity: float64(sh.kv)}, nil
		}
		l.watch, l.kv = w, newKVControl()
	}

	type flight struct {
		r      *server.VirtualRequest
		w      *streamGaps
		sentAt float64
		shown  int
	}
	var flying []*flight
	sent, done, samples := 0, 0, 0
	var res vResult
	ctx := context.Background()
	for done < len(prompts) {
		for sent < len(prompts) {
			l.mu.Lock()
			free := l.queued == 0 && l.inflight < max(int(l.limit), 1)
			l.mu.Unlock()
			if !free {
				break
			}
			if err := l.acquire(ctx, "a", 1); err != nil {
				panic(err)
			}
			p := prompts[sent]
			sent++
			flying = append(flying, &flight{r: v.Send(len(p.TokenIDs()), model.NaturalLength(p), maxTokens),
				w: l.watchStream(maxTokens), sentAt: simT})
		}
		v.Step(step)
		simT += step
		flying = slices.DeleteFunc(flying, func(f *flight) bool {
			if n := int(f.r.Tokens()); c.streamed && n > f.shown {
				f.w.event(backend.Progress{Tokens: n, Exact: true})
				f.shown = n
			}
			if !f.r.Done() {
				return false
			}
			f.w.end(f.r.Prompt(), f.r.Total())
			l.release("a", time.Duration((simT-f.sentAt)/vTimeScale*float64(time.Second)), f.r.Total())
			res.tokensPerS += float64(f.r.Total())
			done++
			return true
		})
		for len(reads) > 0 {
			f := reads[0]
			reads = reads[1:]
			f()
		}
		if done < len(prompts)-150 {
			st := v.Stats()
			samples++
			res.running += float64(st.Running)
			res.kv += float64(st.KVUsed) / float64(sh.kv)
		}
	}
	res.tokensPerS /= simT
	res.preemptions = float64(v.Stats().Retractions)
	res.running /= float64(samples)
	res.kv /= float64(samples)
	return res
}
