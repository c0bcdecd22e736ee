package report

import (
	"context"
	"maps"
	"slices"

	"github.com/eaglet-dev/eaglet/state"
)

// timeBins is how many bins the charts over time have at most; a bin is
// never under a second.
const timeBins = 100

// timeline draws the charts over time of the request-sending instances:
// throughput and requests per endpoint URL, requests in flight per
// endpoint, failures by kind, and the completion tokens spent against the
// plan's estimate.
func timeline(ctx context.Context, st *state.Store, gens []Instance, est float64) ([]Chart, error) {
	ids := make([]string, len(gens))
	endpoint := map[string]string{}
	for i, g := range gens {
		ids[i] = g.ID
		endpoint[g.ID] = g.Endpoint
	}
	first, last, err := st.TimeSpan(ctx, ids)
	if err != nil || first == 0 {
		return nil, err
	}
	width := max(1000, (last-first+timeBins-1)/timeBins)
	bins := int((last-first)/width) + 1
	tb, err := st.Timeline(ctx, ids, first, width)
	if err != nil {
		return nil, err
	}
	fails, err := st.Failures(ctx, ids, first, width)
	if err != nil {
		return nil, err
	}
	sec := float64(width) / 1000
	tokens, requests, inflight := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	cumulative := make([]float64, bins)
	at := func(m map[string][]float64, k string) []float64 {
		if m[k] == nil {
			m[k] = make([]float64, bins)
		}
		return m[k]
	}
	for _, b := range tb {
		if b.Bin < 0 || b.Bin >= bins {
			continue
		}
		url := endpoint[b.Instance]
		if b.URL != "" {
			url += " " + b.URL
		}
		at(tokens, url)[b.Bin] += float64(b.Tokens) / sec
		at(requests, url)[b.Bin] += float64(b.Done) / sec
		f := at(inflight, endpoint[b.Instance])
		f[b.Bin] += float64(b.Sent - b.Done)
		cumulative[b.Bin] += float64(b.Tokens)
	}
	for _, f := range inflight {
		for i := 1; i < bins; i++ {
			f[i] += f[i-1]
		}
	}
	for i := 1; i < bins; i++ {
		cumulative[i] += cumulative[i-1]
	}
	failures := map[string][]float64{}
	for _, f := range fails {
		if f.Bin >= 0 && f.Bin < bins {
			at(failures, failureKind(f.Reason))[f.Bin] += float64(f.N)
		}
	}
	burn := []series{{Name: "completion tokens generated", Points: cumulative}}
	if est > 0 {
		line := make([]float64, bins)
		for i := range line {
			line[i] = est
		}
		burn = append(burn, series{Name: "plan's estimate (records × est_completion_tokens)", Points: line, Dashed: true})
	}
	charts := []Chart{
		lineChart("tokens-per-second", "completion tokens per second, per endpoint URL", "tokens/s", bins, sec, named(tokens)),
		lineChart("requests-per-second", "answers per second, per endpoint URL", "answers/s", bins, sec, named(requests)),
		lineChart("in-flight", "requests in flight, per endpoint", "requests", bins, sec, named(inflight)),
		lineChart("burn", "completion tokens spent", "tokens", bins, sec, burn),
	}
	failChart := lineChart("failures", "failed records by kind, per bin", "records", bins, sec, named(failures))
	if len(failures) == 0 {
		failChart.Note = "no failures"
	}
	return append(charts, failChart), nil
}

func named(m map[string][]float64) []series {
	var out []series
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, series{Name: k, Points: m[k]})
	}
	return out
}
