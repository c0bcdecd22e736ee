package report

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/state"
)

// Histogram is a length distribution binned for a chart: bin i holds the
// values in [Edges[i], Edges[i+1]).
type Histogram struct {
	// Log says the edges grow geometrically (the lengths span decades).
	Log    bool
	Edges  []int
	Counts []int
	// Total counts every value; Cut those stopped at max_tokens.
	Total, Cut int
	// Min and Max are the smallest and largest value seen.
	Min, Max int
	// MaxTokens is the cap sent with the requests, 0 when unknown or mixed.
	MaxTokens int
}

// CutShare is the share of values stopped at max_tokens.
func (h Histogram) CutShare() float64 {
	if h.Total == 0 {
		return 0
	}
	return float64(h.Cut) / float64(h.Total)
}

// maxLinearBins is how many bins a linear histogram gets at most.
const maxLinearBins = 30

// Bin bins value counts (as the store groups them) into a histogram:
// log-scaled, two bins an octave, when the values span more than a decade,
// else linear. maxTokens, when known, is kept inside the last bin so the
// chart can mark it.
func Bin(counts []state.ValueCount, maxTokens int) Histogram {
	h := Histogram{MaxTokens: maxTokens, Min: -1}
	for _, c := range counts {
		if c.N == 0 {
			continue
		}
		h.Total += c.N
		h.Cut += c.Cut
		if h.Min < 0 || c.Value < h.Min {
			h.Min = c.Value
		}
		h.Max = max(h.Max, c.Value)
	}
	if h.Total == 0 {
		h.Min = 0
		return h
	}
	hi := max(h.Max, maxTokens)
	h.Log = hi >= 64 && hi >= 10*max(h.Min, 1)
	if h.Log {
		h.Edges = logEdges(h.Min, hi)
	} else {
		width := max(1, (hi-h.Min+maxLinearBins)/maxLinearBins)
		for e := h.Min; ; e += width {
			h.Edges = append(h.Edges, e)
			if e > hi {
				break
			}
		}
	}
	h.Counts = make([]int, len(h.Edges)-1)
	for _, c := range counts {
		h.Counts[h.bin(c.Value)] += c.N
	}
	return h
}

// logEdges returns edges 0, 1, then round(2^(k/2)), from the one below lo
// to the first past hi.
func logEdges(lo, hi int) []int {
	var edges []int
	if lo == 0 {
		edges = append(edges, 0)
	}
	for k := 0; ; k++ {
		e := int(math.Round(math.Pow(2, float64(k)/2)))
		if len(edges) > 0 && e <= edges[len(edges)-1] {
			continue
		}
		next := int(math.Round(math.Pow(2, float64(k+1)/2)))
		if next <= lo && lo > 0 {
			continue
		}
		edges = append(edges, e)
		if e > hi {
			return edges
		}
	}
}

// bin returns the index of the bin holding v.
func (h Histogram) bin(v int) int {
	lo, hi := 0, len(h.Edges)-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if v >= h.Edges[mid] {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// Merge returns one histogram over several lists of value counts, with one
// max_tokens when they share it.
func Merge(lists [][]state.ValueCount, maxTokens []int) Histogram {
	var all []state.ValueCount
	for _, l := range lists {
		all = append(all, l...)
	}
	mt := 0
	for i, m := range maxTokens {
		if i == 0 {
			mt = m
		} else if m != mt {
			mt = 0
		}
	}
	return Bin(all, mt)
}

var blocks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws the histogram as one line of block characters for a
// terminal: each bin's count scaled to the fullest bin, empty bins blank.
func (h Histogram) Sparkline() string {
	peak := 0
	for _, c := range h.Counts {
		peak = max(peak, c)
	}
	if peak == 0 {
		return ""
	}
	var b strings.Builder
	for _, c := range h.Counts {
		if c == 0 {
			b.WriteRune(' ')
			continue
		}
		b.WriteRune(blocks[min(len(blocks)-1, c*len(blocks)/(peak+1))])
	}
	return b.String()
}

// Summary says what a sparkline spans and how much was cut:
// "16..16384 tok, log; 3.1% cut at max_tokens 16384".
func (h Histogram) Summary() string {
	if h.Total == 0 {
		return ""
	}
	scale := "linear"
	if h.Log {
		scale = "log"
	}
	s := fmt.Sprintf("%d..%d tok, %s", h.Min, h.Max, scale)
	if h.MaxTokens > 0 {
		s += fmt.Sprintf("; %.1f%% cut at max_tokens %d", 100*h.CutShare(), h.MaxTokens)
	}
	return s
}

// Lengths is the completion-length histogram of one request-sending
// instance, with the max_tokens its answers were asked with, for `status`.
func Lengths(ctx context.Context, st *state.Store, inst string) (Histogram, error) {
	counts, err := st.TokenCounts(ctx, inst, true)
	if err != nil {
		return Histogram{}, err
	}
	rows, err := st.Sample(ctx, inst, 1)
	if err != nil {
		return Histogram{}, err
	}
	mt := 0
	for _, r := range rows {
		var rec conv.Record
		if json.Unmarshal(r.Data, &rec) == nil && rec.Generation != nil {
			mt = rec.Generation.MaxTokens
		}
	}
	return Bin(counts, mt), nil
}
