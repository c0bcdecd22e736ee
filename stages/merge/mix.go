package merge

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages"
)

// EvalOptions hold a seeded train/eval split: a record goes to eval by a
// hash of its key alone, so it stays on its side whatever else changes
// (weights, other datasets, a larger cap).
type EvalOptions struct {
	// Fraction is the share of records held out, from 0 to 1.
	Fraction float64 `yaml:"fraction"`
	// Seed chooses which records; the same seed holds out the same ones.
	Seed int `yaml:"seed"`
	// Out is the eval JSONL file, relative to the spec, written in merge's
	// format and order.
	Out string `yaml:"out"`
}

// inEval reports whether the record under key is held out for eval. Copies
// made by weights are keyed "key~n" and follow their record.
func (m *Merge) inEval(key string) bool {
	e := m.opts.Eval
	if e == nil || e.Fraction <= 0 {
		return false
	}
	base, _, _ := strings.Cut(key, "~")
	return float64(stages.SeededHash(e.Seed, "eval", base)>>11)/float64(1<<53) < e.Fraction
}

// trainingTokens is what a record weighs in a mixture by tokens: its
// prompt and answer as tokenize and the server counted them, or, for a
// record nothing counted, its characters at four a token.
func trainingTokens(rec *conv.Record) float64 {
	prompt := rec.PromptTokens
	var completion int
	if g := rec.Generation; g != nil {
		completion = max(g.CompletionTokens, g.TotalCompletionTokens)
		if g.PromptTokens > 0 {
			prompt = g.PromptTokens
		}
	}
	if n := prompt + completion; n > 0 {
		return float64(n)
	}
	chars := 0
	for _, msg := range rec.Conversation() {
		chars += len(msg.Content) + len(msg.Reasoning)
		for _, c := range msg.ToolCalls {
			chars += len(c.Name) + len(c.Arguments)
		}
	}
	return math.Max(1, float64(chars)/4)
}

// mix is a mixture by tokens resolved against the input: how many times
// each dataset's records appear in whole, and the records (by seeded hash)
// that appear once more, so that each dataset's training tokens come to
// its share of the total.
type mix struct {
	whole map[string]int
	// upTo is the hash up to which a dataset's records get one more copy;
	// a dataset absent from it gets none.
	upTo map[string]uint64
	// tokens and want are each dataset's training tokens in the input and
	// in the output, for the log.
	tokens, want map[string]float64
}

// planMix reads the input once and resolves the mixture: each dataset's
// target is its share (its weight over the sum of weights) of the total,
// which is total_tokens when set, else the largest total no dataset must
// repeat a record for. Within a dataset, records are taken in the order of
// a seeded hash of their key until the target is reached, so a larger
// total keeps every record a smaller one kept, and the overshoot is under
// one record per dataset.
func (m *Merge) planMix(ctx context.Context, in stages.Input) (*mix, error) {
	type entry struct {
		hash   uint64
		tokens float64
	}
	byDataset := map[string][]entry{}
	x := &mix{whole: map[string]int{}, upTo: map[string]uint64{}, tokens: map[string]float64{}, want: map[string]float64{}}
	err := in.Each(ctx, func(rec *conv.Record) error {
		if m.inEval(rec.Key) || m.weight(rec.Dataset) <= 0 {
			return nil
		}
		t := trainingTokens(rec)
		byDataset[rec.Dataset] = append(byDataset[rec.Dataset], entry{stages.SeededHash(m.opts.ShuffleSeed, "weight", rec.Key), t})
		x.tokens[rec.Dataset] += t
		return nil
	})
	if err != nil {
		return nil, err
	}
	var weights float64
	for ds := range byDataset {
		weights += m.weight(ds)
	}
	total := m.opts.TotalTokens.Float()
	if m.opts.TotalTokens.IsZero() {
		total = math.Inf(1)
		for ds, t := range x.tokens {
			total = math.Min(total, t*weights/m.weight(ds))
		}
	}
	for ds, entries := range byDataset {
		want := total * m.weight(ds) / weights
		x.want[ds] = want
		whole := int(want / x.tokens[ds])
		x.whole[ds] = whole
		rest := want - float64(whole)*x.tokens[ds]
		if rest < 0.5 {
			// Rounding of a whole multiple, not a record's worth.
			rest = 0
		}
		slices.SortFunc(entries, func(a, b entry) int {
			switch {
			case a.hash < b.hash:
				return -1
			case a.hash > b.hash:
				return 1
			}
			return 0
		})
		var sum float64
		for _, e := range entries {
			if sum >= rest {
				break
			}
			sum += e.tokens
			x.upTo[ds] = e.hash
		}
	}
	return x, nil
}

// copies is how many times a record appears under the mixture.
func (x *mix) copies(m *Merge, rec *conv.Record) int {
	n := x.whole[rec.Dataset]
	if up, ok := x.upTo[rec.Dataset]; ok && stages.SeededHash(m.opts.ShuffleSeed, "weight", rec.Key) <= up {
		n++
	}
	return n
}

// summary says, for the log, what share of the tokens each dataset has.
func (x *mix) summary() string {
	var total float64
	for _, w := range x.want {
		total += w
	}
	var parts []string
	for _, ds := range slices.Sorted(maps.Keys(x.want)) {
		parts = append(parts, fmt.Sprintf("%s %.1f%% (%.0f of its %.0f tokens)", ds, 100*x.want[ds]/total, x.want[ds], x.tokens[ds]))
	}
	return "mixture by tokens: " + strings.Join(parts, ", ")
}

// estimateMix is planMix for plan: each dataset's factor from its
// estimated tokens (bytes at four a token when nothing counted them).
func (m *Merge) estimateMix(parts map[string]stages.Estimate) func(string) float64 {
	tokens := map[string]float64{}
	var weights float64
	for ds, part := range parts {
		if m.weight(ds) <= 0 {
			continue
		}
		t := float64(part.PromptTokens + part.CompletionTokens)
		if t == 0 {
			t = float64(part.Bytes) / 4
		}
		if t > 0 {
			tokens[ds] = t
			weights += m.weight(ds)
		}
	}
	total := m.opts.TotalTokens.Float()
	if m.opts.TotalTokens.IsZero() {
		total = math.Inf(1)
		for ds, t := range tokens {
			total = math.Min(total, t*weights/m.weight(ds))
		}
	}
	return func(ds string) float64 {
		if tokens[ds] == 0 {
			return 0
		}
		return total * m.weight(ds) / weights / tokens[ds]
	}
}
