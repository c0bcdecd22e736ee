package merge

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
)

// collected is a stages.Output that keeps what a Run passed on.
type collected struct {
	recs    []*conv.Record
	dropped map[string]int
}

func (c *collected) Emit(rec *conv.Record) error { c.recs = append(c.recs, rec); return nil }
func (c *collected) Keep(rec *conv.Record) error { c.recs = append(c.recs, rec); return nil }
func (c *collected) Drop(reason string) {
	if c.dropped == nil {
		c.dropped = map[string]int{}
	}
	c.dropped[reason]++
}
func (c *collected) Settle(keep func(string) bool, reason string) {
	c.recs = slices.DeleteFunc(c.recs, func(rec *conv.Record) bool {
		if keep(rec.Key) {
			return false
		}
		c.Drop(reason)
		return true
	})
}

// sized makes n records of dataset ds, each of tokens training tokens.
func sized(ds string, n, tokens int) records {
	var out records
	for i := range n {
		out = append(out, &conv.Record{Key: fmt.Sprintf("%s%04d", ds, i), Dataset: ds,
			Messages:   []conv.Message{{Role: conv.User, Content: "q"}},
			Generation: &conv.Generation{PromptTokens: tokens / 4, CompletionTokens: tokens - tokens/4}})
	}
	return out
}

func runMerge(t *testing.T, m *Merge, in records) *collected {
	t.Helper()
	out := &collected{}
	if err := m.Run(context.Background(), in, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func tokensBy(out *collected) map[string]float64 {
	got := map[string]float64{}
	for _, r := range out.recs {
		got[r.Dataset] += trainingTokens(r)
	}
	return got
}

func resolved(t *testing.T, v string) specs.Expr {
	t.Helper()
	e := specs.Expr{Src: v}
	if err := e.Compile(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Resolve(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestMerge_WeightsByTokens: weights are shares of the training tokens
// written, within one record's tokens per dataset, whatever the records'
// lengths; a larger total keeps every record a smaller one kept.
func TestMerge_WeightsByTokens(t *testing.T) {
	spec := &specs.Spec{Datasets: []*specs.Dataset{{Name: "short", Weight: 1}, {Name: "long", Weight: 1}, {Name: "tools", Weight: 1}}}
	in := append(append(sized("short", 1000, 100), sized("long", 300, 1000)...), sized("tools", 400, 300)...)
	tests := []struct {
		name    string
		weights map[string]float64
		total   string
		want    map[string]float64
	}{
		// By default the largest mixture that repeats nothing: short's
		// 100k tokens are all of its share.
		{"equal shares", nil, "", map[string]float64{"short": 100_000, "long": 100_000, "tools": 100_000}},
		{"shares 0.6/0.3/0.1", map[string]float64{"short": 0.6, "long": 0.3, "tools": 0.1}, "",
			map[string]float64{"short": 100_000, "long": 50_000, "tools": 16_667}},
		// A total past what a dataset holds repeats its records.
		{"total repeats", map[string]float64{"short": 2, "long": 1, "tools": 1}, "1_000_000",
			map[string]float64{"short": 500_000, "long": 250_000, "tools": 250_000}},
		{"weight 0 leaves a dataset out", map[string]float64{"tools": 0}, "", map[string]float64{"short": 100_000, "long": 100_000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &Options{ShuffleSeed: 3, WeightsBy: "tokens", Weights: tt.weights}
			if tt.total != "" {
				opts.TotalTokens = resolved(t, tt.total)
			}
			out := runMerge(t, &Merge{opts: opts, spec: spec, log: t.Logf}, in)
			got := tokensBy(out)
			distinct := map[string]bool{}
			for _, r := range out.recs {
				base, _, _ := strings.Cut(r.Key, "~")
				distinct[base] = true
			}
			// Every record is passed on or dropped, by the reason that says why.
			if n := len(distinct) + out.dropped["over its dataset's share of tokens"] + out.dropped["weight"]; n != len(in) {
				t.Errorf("%d records passed on and %v dropped; want the %d in", len(distinct), out.dropped, len(in))
			}
			if tt.weights["tools"] == 0 && tt.weights != nil && out.dropped["weight"] != 400 {
				t.Errorf("dropped %v; want tools' 400 records for their weight of 0", out.dropped)
			}
			for ds, want := range tt.want {
				perRecord := map[string]float64{"short": 100, "long": 1000, "tools": 300}[ds]
				if math.Abs(got[ds]-want) > perRecord {
					t.Errorf("%s has %.0f training tokens; want %.0f within one record (%g)", ds, got[ds], want, perRecord)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("datasets written: %v; want %v", got, tt.want)
			}
		})
	}
	keys := func(total string) map[string]bool {
		opts := &Options{ShuffleSeed: 3, WeightsBy: "tokens", TotalTokens: resolved(t, total)}
		out := runMerge(t, &Merge{opts: opts, spec: spec, log: t.Logf}, in)
		m := map[string]bool{}
		for _, r := range out.recs {
			m[r.Key] = true
		}
		return m
	}
	small, large := keys("90_000"), keys("180_000")
	for k := range small {
		if !large[k] {
			t.Fatalf("%s is in the 90k-token mixture but not in the 180k one", k)
		}
	}
}

// TestMerge_EvalSplit: the split is a seeded share of the records by key,
// the same on every run, held out once (not weighted), and never in train.
func TestMerge_EvalSplit(t *testing.T) {
	spec := &specs.Spec{Datasets: []*specs.Dataset{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}}}
	in := append(sized("a", 3000, 10), sized("b", 2000, 10)...)
	opts := &Options{ShuffleSeed: 1, Weights: map[string]float64{"b": 2}, Eval: &EvalOptions{Fraction: 0.02, Seed: 7, Out: "eval.jsonl"}}
	m := &Merge{opts: opts, spec: spec, log: t.Logf}
	out := runMerge(t, m, in)
	held, train := map[string]int{}, map[string]int{}
	for _, r := range out.recs {
		base, _, _ := strings.Cut(r.Key, "~")
		if m.inEval(r.Key) {
			held[base]++
		} else {
			train[base]++
		}
	}
	if n := len(held); n < 70 || n > 130 {
		t.Errorf("%d of 5000 records held out; want about 100 (2%%)", n)
	}
	for k, n := range held {
		if n != 1 || train[k] != 0 {
			t.Errorf("%s is held out %d times and in train %d times; want once, and never in train", k, n, train[k])
		}
	}
	if len(held)+len(train) != 5000 {
		t.Errorf("%d distinct records written; want all 5000", len(held)+len(train))
	}
	again := &Merge{opts: &Options{ShuffleSeed: 9, Eval: &EvalOptions{Fraction: 0.02, Seed: 7}}, spec: spec}
	other := &Merge{opts: &Options{Eval: &EvalOptions{Fraction: 0.02, Seed: 8}}, spec: spec}
	same, moved := 0, 0
	for _, r := range in {
		if again.inEval(r.Key) != m.inEval(r.Key) {
			t.Fatalf("the shuffle seed or weights moved %s across the split", r.Key)
		}
		if m.inEval(r.Key) {
			same++
			if !other.inEval(r.Key) {
				moved++
			}
		}
	}
	if moved < same/2 {
		t.Errorf("another eval seed held out %d of the same %d records; want a different sample", same-moved, same)
	}
}
