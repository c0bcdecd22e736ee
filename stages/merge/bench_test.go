package merge

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
)

// generatedInput makes n records of three datasets as it is read, so the
// benchmark measures merge rather than a slice of records.
type generatedInput int

func (n generatedInput) Count() int { return int(n) }

func (n generatedInput) Each(_ context.Context, fn func(*conv.Record) error) error {
	for i := range int(n) {
		ds := []string{"chat", "code", "tools"}[i%3]
		rec := &conv.Record{Key: fmt.Sprintf("%032x", i*2654435761), Dataset: ds,
			Messages:   []conv.Message{{Role: conv.User, Content: "q"}},
			Generation: &conv.Generation{PromptTokens: 100, CompletionTokens: 200 + (i%7)*300}}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

// discard is an Output that keeps nothing.
type discard struct{ n int }

func (d *discard) Emit(*conv.Record) error { d.n++; return nil }
func (d *discard) Keep(*conv.Record) error { d.n++; return nil }
func (d *discard) Drop(string)             {}

// Settle is not called by merge, which knows a record's fate as it reads it.
func (d *discard) Settle(func(string) bool, string) { panic("merge settled its output") }

// BenchmarkMixByTokens: merge's Run with weights_by tokens and an eval
// split over EAGLET_BENCH_RECORDS records (default 1,000,000), reporting
// what resolving the mixture allocates a record beyond reading it (its
// entries, freed once resolved).
func BenchmarkMixByTokens(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("EAGLET_BENCH_RECORDS")); err == nil {
		n = v
	}
	spec := &specs.Spec{Datasets: []*specs.Dataset{{Name: "chat", Weight: 0.5}, {Name: "code", Weight: 0.3}, {Name: "tools", Weight: 0.2}}}
	allocs := func(fn func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	for b.Loop() {
		m := &Merge{opts: &Options{ShuffleSeed: 1, WeightsBy: "tokens", Eval: &EvalOptions{Fraction: 0.02, Seed: 7}}, spec: spec, log: func(string, ...any) {}}
		reading := allocs(func() { generatedInput(n).Each(context.Background(), func(*conv.Record) error { return nil }) })
		mixing := allocs(func() {
			if _, err := m.planMix(context.Background(), generatedInput(n)); err != nil {
				b.Fatal(err)
			}
		})
		out := &discard{}
		started := time.Now()
		if err := m.Run(context.Background(), generatedInput(n), out); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(started).Seconds(), "run-s")
		b.ReportMetric(float64(mixing-reading)/float64(n), "mix-B/record")
		b.ReportMetric(float64(out.n), "records-out")
	}
}
