package report

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/eaglet-dev/eaglet/state"
)

// timeBins is how many bins the charts over time have at most; a bin is
// never under a second.
const timeBins = 100

// timeline draws the charts over time of the request-sending instances'
// latest run: throughput and answers per endpoint URL, requests in flight
// per endpoint, failures by kind, and the completion tokens spent against
// the plan's estimate and against each budget limit. The title says when
// that run began.
func timeline(ctx context.Context, st *state.Store, gens []Instance, est float64, limits []budgetLimit, o outcomeCounts) (string, []Chart, error) {
	ids := make([]string, len(gens))
	endpoint := map[string]string{}
	for i, g := range gens {
		ids[i] = g.ID
		endpoint[g.ID] = g.Endpoint
	}
	first, last, err := st.TimeSpan(ctx, ids)
	if err != nil || first == 0 {
		return "", nil, err
	}
	tl, err := binTimeline(ctx, st, ids, endpoint, first, last)
	if err != nil {
		return "", nil, err
	}
	// A store holds every run's answers: an idle stretch (nothing sent,
	// finished or in flight) ends one run, and the charts show the last.
	if idle := tl.lastIdle(); idle >= 0 {
		if tl, err = binTimeline(ctx, st, ids, endpoint, first+int64(idle+1)*tl.width, last); err != nil {
			return "", nil, err
		}
	}
	sec := float64(tl.width) / 1000
	bins := tl.bins
	burn := []series{{Name: "completion tokens generated", Points: tl.cumulative}}
	if est > 0 {
		line := make([]float64, bins)
		for i := range line {
			line[i] = est
		}
		burn = append(burn, series{Name: "plan's estimate (records × est_completion_tokens)", Points: line, Dashed: true})
	}
	firstToken := lineChart("first-token", "mean wait for the first token, per endpoint URL (by when sent)", "seconds", bins, sec, tl.firstTokenSeries())
	if len(tl.firstWait) == 0 {
		firstToken.Note = "no streamed answers (the wait for a first token is seen only when streaming)"
	}
	charts := []Chart{
		lineChart("tokens-per-second", "completion tokens per second, per endpoint URL", "tokens/s", bins, sec, named(tl.tokens)),
		lineChart("requests-per-second", "answers per second, per endpoint URL", "answers/s", bins, sec, named(tl.requests)),
		lineChart("in-flight", "requests in flight, per endpoint", "requests", bins, sec, named(tl.inflight)),
		firstToken,
		lineChart("burn", "completion tokens spent, all runs", "tokens", bins, sec, burn),
	}
	fails, err := st.Failures(ctx, ids, tl.start, tl.width)
	if err != nil {
		return "", nil, err
	}
	failures := map[string][]float64{}
	for _, f := range fails {
		if f.Bin >= 0 && f.Bin < bins {
			if failures[failureKind(f.Reason)] == nil {
				failures[failureKind(f.Reason)] = make([]float64, bins)
			}
			failures[failureKind(f.Reason)][f.Bin] += float64(f.N)
		}
	}
	failChart := lineChart("failures", "failed records by kind, per bin", "records", bins, sec, named(failures))
	if len(failures) == 0 {
		failChart.Note = "no failures"
	}
	charts = append(charts, failChart)
	if len(limits) > 0 {
		charts = append(charts, budgetChart(limits, tl, o))
	}
	title := "Over time: the run from " + time.UnixMilli(tl.start).Format("2006-01-02 15:04:05")
	return title, charts, nil
}

// binned is the timeline of a window cut into bins.
type binned struct {
	start, width               int64
	bins                       int
	tokens, requests, inflight map[string][]float64
	cumulative                 []float64
	// firstWait and streamed sum, per URL and bin of sending, the seconds
	// streamed answers waited for their first token and their number.
	firstWait, streamed map[string][]float64
	// live sums, per instance and bin of finishing, the live, done answers
	// (what a budget counts); those finished before the window are in bin 0.
	live map[string]*liveBins
}

// liveBins are an instance's live answers and their tokens, per bin.
type liveBins struct{ answers, prompt, completion []float64 }

// firstTokenSeries is the mean wait for the first token per URL; a bin
// in which no streamed request was sent holds the bin before it, since
// nothing was measured there.
func (t *binned) firstTokenSeries() []series {
	var out []series
	for _, s := range named(t.firstWait) {
		n := t.streamed[s.Name]
		mean := make([]float64, len(s.Points))
		for i, wait := range s.Points {
			switch {
			case n[i] > 0:
				mean[i] = wait / n[i]
			case i > 0:
				mean[i] = mean[i-1]
			}
		}
		out = append(out, series{Name: s.Name, Points: mean})
	}
	return out
}

func binTimeline(ctx context.Context, st *state.Store, ids []string, endpoint map[string]string, first, last int64) (*binned, error) {
	t := &binned{start: first, width: max(1000, (last-first+timeBins-1)/timeBins),
		tokens: map[string][]float64{}, requests: map[string][]float64{}, inflight: map[string][]float64{},
		firstWait: map[string][]float64{}, streamed: map[string][]float64{}, live: map[string]*liveBins{}}
	t.bins = int((last-first)/t.width) + 1
	tb, err := st.Timeline(ctx, ids, first, t.width)
	if err != nil {
		return nil, err
	}
	sec := float64(t.width) / 1000
	t.cumulative = make([]float64, t.bins)
	at := func(m map[string][]float64, k string) []float64 {
		if m[k] == nil {
			m[k] = make([]float64, t.bins)
		}
		return m[k]
	}
	var before float64
	for _, b := range tb {
		if b.Live > 0 && b.Bin < t.bins {
			l := t.live[b.Instance]
			if l == nil {
				l = &liveBins{make([]float64, t.bins), make([]float64, t.bins), make([]float64, t.bins)}
				t.live[b.Instance] = l
			}
			i := max(b.Bin, 0)
			l.answers[i] += float64(b.Live)
			l.prompt[i] += float64(b.LivePrompt)
			l.completion[i] += float64(b.LiveCompletion)
		}
		f := at(t.inflight, endpoint[b.Instance])
		if b.Bin < 0 {
			// Tokens spent and requests still running when the window opens.
			before += float64(b.Tokens)
			f[0] += float64(b.Sent - b.Done)
			continue
		}
		if b.Bin >= t.bins {
			continue
		}
		url := endpoint[b.Instance]
		if b.URL != "" {
			url += " " + b.URL
		}
		at(t.tokens, url)[b.Bin] += float64(b.Tokens) / sec
		at(t.requests, url)[b.Bin] += float64(b.Done) / sec
		if b.Streamed > 0 {
			at(t.firstWait, url)[b.Bin] += float64(b.FirstWait) / 1000
			at(t.streamed, url)[b.Bin] += float64(b.Streamed)
		}
		f[b.Bin] += float64(b.Sent - b.Done)
		t.cumulative[b.Bin] += float64(b.Tokens)
	}
	for _, f := range t.inflight {
		for i := 1; i < t.bins; i++ {
			f[i] += f[i-1]
		}
	}
	t.cumulative[0] += before
	for i := 1; i < t.bins; i++ {
		t.cumulative[i] += t.cumulative[i-1]
	}
	return t, nil
}

// lastIdle is the last bin before the final stretch of activity in which
// nothing was sent, finished or in flight, or -1.
func (t *binned) lastIdle() int {
	active := make([]bool, t.bins)
	for _, m := range []map[string][]float64{t.requests, t.inflight} {
		for _, v := range m {
			for i, x := range v {
				active[i] = active[i] || x != 0
			}
		}
	}
	seen := false
	for i := t.bins - 1; i >= 0; i-- {
		if active[i] {
			seen = true
		} else if seen {
			return i
		}
	}
	return -1
}

func named(m map[string][]float64) []series {
	var out []series
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, series{Name: k, Points: m[k]})
	}
	return out
}
