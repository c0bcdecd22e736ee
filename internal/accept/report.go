package accept

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Figures are rows summed. Every field is a count or a duration, so a
// breakdown's lines add up to its total, and the ratios are taken of the
// sums: a long answer weighs as its tokens do.
type Figures struct {
	Rows, Requests           int
	CompletionTokens, Verify int
	Accepted, Drafted        int
	Latency                  time.Duration
}

// add sums r into f.
func (f *Figures) add(r Row) {
	f.Rows++
	f.Requests += r.Requests
	f.CompletionTokens += r.CompletionTokens
	f.Verify += r.Verify
	f.Latency += r.Latency
	if r.Counted {
		f.Accepted += r.Accepted
		f.Drafted += r.Drafted
	}
}

// plus returns the sum of f and g.
func (f Figures) plus(g Figures) Figures {
	f.Rows += g.Rows
	f.Requests += g.Requests
	f.CompletionTokens += g.CompletionTokens
	f.Verify += g.Verify
	f.Accepted += g.Accepted
	f.Drafted += g.Drafted
	f.Latency += g.Latency
	return f
}

// AcceptLength is completion tokens over verify steps, as SGLang's
// spec_accept_length and SpecForge's benchmarks report it: the tokens one
// target forward pass yields, the prefill's token and each step's bonus
// token included (vLLM's logged "mean acceptance length", 1 + accepted
// over drafts, leaves the prefill's token out). 0 without a verify step:
// the baseline, or answers of one token.
func (f Figures) AcceptLength() float64 {
	if f.Verify == 0 {
		return 0
	}
	return float64(f.CompletionTokens) / float64(f.Verify)
}

// AcceptRate is accepted over proposed draft tokens, over the rows whose
// server counted them; 0 when none did.
func (f Figures) AcceptRate() float64 {
	if f.Drafted == 0 {
		return 0
	}
	return float64(f.Accepted) / float64(f.Drafted)
}

// Throughput is completion tokens a second of a request's time: a
// request's decode speed at the concurrency the rows were measured at.
func (f Figures) Throughput() float64 {
	if f.Latency <= 0 {
		return 0
	}
	return float64(f.CompletionTokens) / f.Latency.Seconds()
}

// Sum returns the rows' figures.
func Sum(rows []Row) Figures {
	var f Figures
	for _, r := range rows {
		f.add(r)
	}
	return f
}

// A Dimension splits rows by one of their keys.
type Dimension struct {
	// Name names the dimension in a report's heading.
	Name string
	// key returns a row's label and its rank: lines sort by rank, then
	// label.
	key func(Row) (string, int)
}

// The dimensions a report breaks acceptance down by.
var (
	ByDataset = Dimension{"dataset", func(r Row) (string, int) { return r.Dataset, 0 }}
	ByTurn    = Dimension{"turn", func(r Row) (string, int) {
		if r.Turn == 0 {
			return "unknown", unknownTurn
		}
		return strconv.Itoa(r.Turn), r.Turn
	}}
	BySegment = Dimension{"segment", func(r Row) (string, int) {
		switch r.Segment {
		case Whole:
			return "whole answer", 0
		case Reasoning:
			return string(Reasoning), 1
		case Content:
			return string(Content), 2
		case ToolCall:
			return string(ToolCall), 3
		}
		return string(r.Segment), 4
	}}
	ByDrafter = Dimension{"drafter", func(r Row) (string, int) {
		if r.Drafter == "" {
			return "baseline", 0
		}
		return r.Drafter, 1
	}}
)

// unknownTurn ranks an unknown turn after every known one.
const unknownTurn = math.MaxInt

// ByContext splits rows by their context length's bucket.
func ByContext(b Buckets) Dimension {
	return Dimension{"context", func(r Row) (string, int) {
		i := b.Index(r.ContextTokens)
		return b.Label(i), i
	}}
}

// Buckets are context-length bounds in tokens, ascending: bucket i holds
// lengths from bound i-1 (0 for the first) up to below bound i, and a last
// bucket holds the rest.
type Buckets []int

// Index returns the bucket of a context of n tokens.
func (b Buckets) Index(n int) int {
	i, _ := slices.BinarySearch(b, n+1)
	return i
}

// Label names bucket i: "2k-4k", "32k+".
func (b Buckets) Label(i int) string {
	switch {
	case len(b) == 0:
		return "all"
	case i == len(b):
		return tokens(b[i-1]) + "+"
	case i == 0:
		return "0-" + tokens(b[0])
	}
	return tokens(b[i-1]) + "-" + tokens(b[i])
}

// tokens writes n tokens short: 2k for 2000, else the number.
func tokens(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

// Part is the rows with one value of a dimension.
type Part struct {
	Label string
	Rows  []Row
	rank  int
}

// Partition splits rows by d, in d's order; rows keep their order.
func Partition(rows []Row, d Dimension) []Part {
	index := map[string]int{}
	var parts []Part
	for _, r := range rows {
		label, rank := d.key(r)
		i, ok := index[label]
		if !ok {
			i = len(parts)
			index[label] = i
			parts = append(parts, Part{Label: label, rank: rank})
		}
		parts[i].Rows = append(parts[i].Rows, r)
	}
	slices.SortStableFunc(parts, func(a, b Part) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.Label, b.Label))
	})
	return parts
}

// Line is one line of a breakdown.
type Line struct {
	Label string
	Figures
}

// Breakdown is a dimension's lines and their total.
type Breakdown struct {
	By    string
	Lines []Line
	Total Figures
}

// Break sums rows by d, and all of them.
func Break(rows []Row, d Dimension) Breakdown {
	b := Breakdown{By: d.Name, Total: Sum(rows)}
	for _, p := range Partition(rows, d) {
		b.Lines = append(b.Lines, Line{Label: p.Label, Figures: Sum(p.Rows)})
	}
	return b
}
