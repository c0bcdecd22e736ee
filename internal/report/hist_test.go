package report

import (
	"slices"
	"testing"

	"github.com/eaglet-dev/eaglet/state"
)

func TestBin(t *testing.T) {
	tests := []struct {
		name      string
		counts    []state.ValueCount
		maxTokens int
		log       bool
		edges     []int // nil: not checked
		cut       float64
	}{
		{name: "empty", counts: nil},
		{name: "narrow range is linear", counts: []state.ValueCount{{Value: 10, N: 2}, {Value: 12, N: 1}, {Value: 15, N: 3}},
			edges: []int{10, 11, 12, 13, 14, 15, 16}},
		{name: "decades are log-scaled, two bins an octave", counts: []state.ValueCount{{Value: 3, N: 1}, {Value: 40, N: 5}, {Value: 100, N: 2}},
			log: true, edges: []int{3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128}},
		{name: "max_tokens extends the axis and is inside the last bin", counts: []state.ValueCount{{Value: 20, N: 4}, {Value: 500, N: 3},
			{Value: 4096, N: 2, Cut: 2}}, maxTokens: 4096, log: true, cut: 2.0 / 9},
		{name: "zero-length answers get the first bin", counts: []state.ValueCount{{Value: 0, N: 1}, {Value: 1, N: 1}, {Value: 300, N: 1}},
			log: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Bin(tt.counts, tt.maxTokens)
			total := 0
			for _, c := range tt.counts {
				total += c.N
			}
			if h.Total != total || h.Log != tt.log {
				t.Fatalf("total %d log %v, want %d %v", h.Total, h.Log, total, tt.log)
			}
			if total == 0 {
				if len(h.Counts) != 0 || h.Sparkline() != "" {
					t.Errorf("empty histogram has bins %v", h.Counts)
				}
				return
			}
			if tt.edges != nil && !slices.Equal(h.Edges, tt.edges) {
				t.Errorf("edges %v, want %v", h.Edges, tt.edges)
			}
			sum := 0
			for i, c := range h.Counts {
				sum += c
				if h.Edges[i] >= h.Edges[i+1] {
					t.Errorf("edges not increasing at %d: %v", i, h.Edges)
				}
			}
			if sum != total {
				t.Errorf("bins hold %d values, want %d", sum, total)
			}
			for _, c := range tt.counts {
				if i := h.bin(c.Value); c.Value < h.Edges[i] || c.Value >= h.Edges[i+1] {
					t.Errorf("%d binned in [%d, %d)", c.Value, h.Edges[i], h.Edges[i+1])
				}
			}
			if last := h.Edges[len(h.Edges)-1]; last <= max(h.Max, tt.maxTokens) {
				t.Errorf("last edge %d does not pass %d", last, max(h.Max, tt.maxTokens))
			}
			if h.CutShare() != tt.cut {
				t.Errorf("cut share %v, want %v", h.CutShare(), tt.cut)
			}
			if n := len([]rune(h.Sparkline())); n != len(h.Counts) {
				t.Errorf("sparkline has %d characters for %d bins", n, len(h.Counts))
			}
		})
	}
}

func TestHistogram_Sparkline(t *testing.T) {
	h := Histogram{Edges: []int{0, 1, 2, 3, 4, 5}, Counts: []int{1, 0, 4, 8, 2}, Total: 15, Max: 4, MaxTokens: 4, Cut: 3}
	if got, want := h.Sparkline(), "▁ ▄█▂"; got != want {
		t.Errorf("sparkline %q, want %q", got, want)
	}
	if got, want := h.Summary(), "0..4 tok, linear; 20.0% cut at max_tokens 4"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
