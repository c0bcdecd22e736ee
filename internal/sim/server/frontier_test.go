package server

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
)

// BenchmarkSchedulerFrontier runs BenchmarkScheduling's shape (stages/
// generate: 900 prompts, answers of 3,500 tokens on average, lognormal
// sigma 1, at most 16,384, a 159,277-token cache, 50 tokens/s a sequence,
// 8,000 prefill tokens/s) through this scheduler in simulated time, with
// no client and no clock in the way, to bound what any client can reach:
// fixed concurrencies, and an oracle that knows every answer's length
// before it sends it and sends one only when the cache holds, at its
// peak, everything in flight until it ends. No client knows as much;
// eaglet's `concurrency: auto` estimates the same peak from the lengths of
// answers that ended.
//
//	go test ./internal/sim/server -run '^$' -bench SchedulerFrontier -benchtime 1x
func BenchmarkSchedulerFrontier(b *testing.B) {
	var prompts []sim.Prompt
	for _, ds := range []string{"a", "b", "c"} {
		for i := range 300 {
			prompts = append(prompts, sim.Prompt{Messages: []conv.Message{{Role: conv.User,
				Content: fmt.Sprintf("Dataset %s, question %d: explain idea %d in detail.", ds, i, i*7)}}})
		}
	}
	policies := []struct {
		name  string
		fixed int
		// every is the oracle's decision spacing in decode steps of 0.25
		// s (the simulator's 5 ms tick at 50 times real time).
		every int
		// peak is the share of the cache the oracle lets the peak reach
		// (0: all of it); over 1 it accepts overflows it knows of.
		peak float64
	}{
		{name: "fixed32", fixed: 32}, {name: "fixed38", fixed: 38}, {name: "fixed45", fixed: 45},
		{name: "fixed64", fixed: 64}, {name: "fixed96", fixed: 96}, {name: "fixed150", fixed: 150},
		// auto decides every 20 ms: 4 ticks.
		{name: "oracle-every-1s", every: 4}, {name: "oracle-every-tick", every: 1},
		// Whether holding back more, or overflowing on purpose, pays.
		{name: "oracle-every-1s-peak0.95", every: 4, peak: 0.95},
		{name: "oracle-every-1s-peak1.05", every: 4, peak: 1.05},
	}
	for _, pol := range policies {
		b.Run(pol.name, func(b *testing.B) {
			for b.Loop() {
				// Five models (seeds) of the same length distribution, each
				// a different draw of the 900 answers: the means.
				var sum frontierResult
				const seeds = 5
				for seed := range uint64(seeds) {
					model := sim.New(sim.Config{Seed: seed + 1, MeanTokens: 3500, Sigma: 1, MaxLen: 16384})
					r := frontierRun(model, prompts, pol.fixed, pol.every, cmp.Or(pol.peak, 1))
					sum.tokens += r.tokens / r.seconds
					sum.retractions += r.retractions
					sum.running += r.running
					sum.kv += r.kv
				}
				b.ReportMetric(sum.tokens/seeds, "sim-tokens/s")
				b.ReportMetric(float64(sum.retractions)/seeds, "preemptions")
				b.ReportMetric(sum.running/seeds, "mean-running")
				b.ReportMetric(sum.kv/seeds, "mean-kv-usage")
			}
		})
	}
}

type frontierResult struct {
	tokens, seconds, running, kv float64
	retractions                  int64
}

// frontierRun sends prompts in order, keeping fixed in flight, or with
// fixed 0 as the oracle decides every few steps (letting the peak reach
// peak times the cache), and steps the scheduler until every answer is
// out. Mean running and KV usage are sampled until all but the last 150
// answers are in, as BenchmarkScheduling does.
func frontierRun(model *sim.Model, prompts []sim.Prompt, fixed, every int, peak float64) frontierResult {
	const kv, step = 159_277, 0.25
	v := NewVirtual(Config{Speed: 50, PrefillSpeed: 8000, KVTokens: kv, MaxRunning: 256, Slowdown: 0.002 * 256})
	var sent, flying []*VirtualRequest
	send := func() {
		p := prompts[len(sent)]
		r := v.Send(len(p.TokenIDs()), model.NaturalLength(p), 16384)
		sent = append(sent, r)
		flying = append(flying, r)
	}
	var res frontierResult
	samples, done := 0, 0
	for steps := 0; done < len(prompts); steps++ {
		switch {
		case fixed > 0:
			for len(flying) < fixed && len(sent) < len(prompts) {
				send()
			}
		case steps%every == 0:
			for len(sent) < len(prompts) && (len(flying) == 0 || oraclePeak(flying, model, prompts[len(sent)]) <= peak*kv) {
				send()
			}
		}
		v.Step(step)
		res.seconds += step
		flying = slices.DeleteFunc(flying, (*VirtualRequest).Done)
		done = len(sent) - len(flying)
		if done < len(prompts)-150 {
			st := v.Stats()
			samples++
			res.running += float64(st.Running)
			res.kv += float64(st.KVUsed) / kv
		}
	}
	for _, r := range sent {
		res.tokens += float64(r.Total())
	}
	res.retractions = v.Stats().Retractions
	res.running /= float64(samples)
	res.kv /= float64(samples)
	return res
}

// oraclePeak is the most cache the requests in flight and prompt p will
// hold together before each ends, knowing how long each answer is: all
// grow a token a step, so the cache is at a peak just before one ends.
func oraclePeak(flying []*VirtualRequest, model *sim.Model, p sim.Prompt) float64 {
	type flight struct{ held, left float64 }
	fs := []flight{{float64(len(p.TokenIDs())), float64(model.NaturalLength(p))}}
	for _, r := range flying {
		fs = append(fs, flight{float64(r.Prompt()) + r.Tokens(), float64(r.Total()) - r.Tokens()})
	}
	slices.SortFunc(fs, func(a, b flight) int { return cmp.Compare(a.left, b.left) })
	held := 0.0
	for _, f := range fs {
		held += f.held
	}
	peak := held
	for i, f := range fs {
		peak = max(peak, held+float64(len(fs)-i)*f.left)
		held -= f.held
	}
	return peak
}
