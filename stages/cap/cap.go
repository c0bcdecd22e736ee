// Package cap is the stage that takes a deterministic, seeded sample of N
// records, optionally after dropping records by a condition (length).
package cap

import (
	"container/heap"
	"context"
	"fmt"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

func init() {
	stages.Register(stages.Define("cap",
		"keep a seeded sample of at most max_samples records (a larger cap keeps the smaller one's records)",
		check, newCap))
}

// Options of cap.
type Options struct {
	// MaxSamples is how many records to keep at most (an expression).
	MaxSamples specs.Expr `yaml:"max_samples" eval:"int" doc:"expression, required"`
	// Seed chooses the sample; the same seed always picks the same records.
	Seed int `yaml:"seed" doc:"seeds the hash records are ranked by"`
	// DropIf drops records before sampling, e.g. "prompt_chars > 20000".
	DropIf specs.Expr `yaml:"drop_if" eval:"predicate" doc:"record predicate"`
}

func check(_ *specs.Spec, st *specs.Stage, o *Options) error {
	if o.MaxSamples.IsZero() {
		return &specs.Error{Pos: st.Pos, Msg: fmt.Sprintf("stage %s: cap needs `max_samples:` in `with:`", st.Name)}
	}
	return nil
}

// Cap samples records. Records are ranked by a seeded hash of their key
// rather than taken from the top, since datasets are often sorted; ranking
// makes a larger cap a superset of a smaller one, so raising it only adds work.
type Cap struct {
	n    int
	opts *Options
	vars any
}

var (
	_ stages.Batch     = (*Cap)(nil)
	_ stages.Estimator = (*Cap)(nil)
)

func newCap(inst *stages.Instance, o *Options) (stages.Stage, error) {
	n := o.MaxSamples.Int()
	if n < 0 {
		return nil, o.MaxSamples.Errorf("max_samples evaluates to %d; want 0 or more", n)
	}
	return &Cap{n: n, opts: o, vars: inst.Spec.VarsValue()}, nil
}

// Rank is a record's place in the seeded order; exported for tests and
// for anyone who wants to reproduce a sample outside eaglet.
func Rank(seed int, key string) uint64 { return stages.SeededHash(seed, key) }

func (c *Cap) dropped(rec *conv.Record) (bool, error) {
	if c.opts.DropIf.IsZero() {
		return false, nil
	}
	v, err := c.opts.DropIf.Eval(stages.RecordEnv(rec, c.vars))
	if err != nil {
		return false, fmt.Errorf("record %s: %w", rec.Key, err)
	}
	return v.(bool), nil
}

// Run finds the n best-ranked records (memory is O(n), not O(input)) in
// one read of the input: it keeps each record that ranks among the best
// seen so far, since one that does not never will, and settles at the end
// which of those stay. Without drop_if it needs keys alone, and reads no
// record where the input can say so.
func (c *Cap) Run(ctx context.Context, in stages.Input, out stages.Output) error {
	best := &rankHeap{}
	offer := func(rec *conv.Record) error {
		r := ranked{Rank(c.opts.Seed, rec.Key), rec.Key}
		switch {
		case best.Len() < c.n:
			heap.Push(best, r)
		case c.n > 0 && r.less((*best)[0]):
			(*best)[0] = r
			heap.Fix(best, 0)
		default:
			out.Drop("over max_samples")
			return nil
		}
		return out.Keep(rec)
	}
	var err error
	if keys, ok := in.(stages.KeyInput); ok && c.opts.DropIf.IsZero() {
		err = keys.EachKey(ctx, func(key, _ string) error { return offer(&conv.Record{Key: key}) })
	} else {
		err = in.Each(ctx, func(rec *conv.Record) error {
			switch drop, err := c.dropped(rec); {
			case err != nil:
				return err
			case drop:
				out.Drop("drop_if: " + c.opts.DropIf.Src)
				return nil
			}
			return offer(rec)
		})
	}
	if err != nil {
		return err
	}
	// The chosen are the records ranked up to the last of the best, the
	// top of the heap: deciding by rank, not by a set of the chosen keys,
	// spares a map of max_samples keys (a tenth of a million-record run).
	full := best.Len() == c.n
	var last ranked
	if full && c.n > 0 {
		last = (*best)[0]
	}
	out.Settle(func(key string) bool {
		return c.n > 0 && (!full || !last.less(ranked{Rank(c.opts.Seed, key), key}))
	}, "over max_samples")
	return nil
}

// Estimate is min(input, max_samples).
func (c *Cap) Estimate(in stages.Estimate) (stages.Estimate, error) {
	out := in
	if in.Records > c.n {
		out.Records = c.n
		if in.Records > 0 {
			out.PromptTokens = in.PromptTokens * int64(c.n) / int64(in.Records)
			out.Bytes = in.Bytes * int64(c.n) / int64(in.Records)
		}
	}
	if !c.opts.DropIf.IsZero() {
		out.Exact = false
	}
	return out, nil
}

type ranked struct {
	rank uint64
	key  string
}

func (a ranked) less(b ranked) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.key < b.key)
}

// rankHeap is a max-heap: the worst of the best n sits on top, ready to go.
type rankHeap []ranked

func (h rankHeap) Len() int           { return len(h) }
func (h rankHeap) Less(i, j int) bool { return h[j].less(h[i]) }
func (h rankHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rankHeap) Push(x any)        { *h = append(*h, x.(ranked)) }
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
