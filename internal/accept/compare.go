package accept

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
)

// ErrNoPairs says two sets of rows share no prompt to compare them on.
var ErrNoPairs = errors.New("no prompt measured on both sides")

// Resampling sets the paired bootstrap behind a comparison's interval.
// The same seed and rows give the same interval.
type Resampling struct {
	Seed uint64
	// Resamples is how many times the pairs are resampled (2000 when 0).
	Resamples int
	// Level is the interval's confidence level (0.95 when 0).
	Level float64
}

// Estimate is a figure and its confidence interval at Level.
type Estimate struct {
	Value, Low, High, Level float64
}

// Comparison is side B against side A on the prompts both measured.
type Comparison struct {
	// Pairs counts the prompts both sides measured; OnlyA and OnlyB count
	// those one side measured alone, which are left out.
	Pairs, OnlyA, OnlyB int
	// A and B are each side's figures over the paired prompts.
	A, B Figures
	Estimate
}

// Compare estimates drafter B's acceptance length minus drafter A's on
// the prompts both measured (a prompt is its key, turn, segment and
// sampling; one side's repeated rows of a prompt count as one): by how
// much B's drafts go further. The interval is a paired bootstrap's, so
// the prompts' own spread, which both drafters share, does not widen it.
func Compare(a, b []Row, r Resampling) (Comparison, error) {
	return paired(a, b, r, func(a, b Figures) float64 { return b.AcceptLength() - a.AcceptLength() })
}

// SpeedUp estimates a drafter's throughput over the baseline's (the
// target alone) on the prompts both measured: how many times faster a
// request decodes with the drafter. Its interval is Compare's bootstrap.
func SpeedUp(baseline, drafter []Row, r Resampling) (Comparison, error) {
	return paired(baseline, drafter, r, func(a, b Figures) float64 {
		if a.Throughput() == 0 {
			return 0
		}
		return b.Throughput() / a.Throughput()
	})
}

// pairKey is what makes two rows a measurement of the same prompt.
type pairKey struct {
	prompt   string
	turn     int
	segment  Segment
	sampling string
}

func (k pairKey) compare(o pairKey) int {
	return cmp.Or(cmp.Compare(k.prompt, o.prompt), cmp.Compare(k.turn, o.turn),
		cmp.Compare(k.segment, o.segment), cmp.Compare(k.sampling, o.sampling))
}

func units(rows []Row) map[pairKey]Figures {
	out := map[pairKey]Figures{}
	for _, r := range rows {
		k := pairKey{r.Prompt, r.Turn, r.Segment, r.Sampling}
		f := out[k]
		f.add(r)
		out[k] = f
	}
	return out
}

// paired pairs the rows by prompt, in key order so that the rows' order
// does not matter, and bootstraps stat over the pairs.
func paired(a, b []Row, r Resampling, stat func(a, b Figures) float64) (Comparison, error) {
	ua, ub := units(a), units(b)
	var keys []pairKey
	for k := range ua {
		if _, ok := ub[k]; ok {
			keys = append(keys, k)
		}
	}
	c := Comparison{Pairs: len(keys), OnlyA: len(ua) - len(keys), OnlyB: len(ub) - len(keys)}
	if len(keys) == 0 {
		return c, ErrNoPairs
	}
	slices.SortFunc(keys, pairKey.compare)
	pa, pb := make([]Figures, len(keys)), make([]Figures, len(keys))
	for i, k := range keys {
		pa[i], pb[i] = ua[k], ub[k]
		c.A, c.B = c.A.plus(pa[i]), c.B.plus(pb[i])
	}
	c.Value = stat(c.A, c.B)

	n, level := r.Resamples, r.Level
	if n <= 0 {
		n = 2000
	}
	if level <= 0 || level >= 1 {
		level = 0.95
	}
	rng := rand.New(rand.NewPCG(r.Seed, 0x6561676c6574))
	stats := make([]float64, n)
	for i := range stats {
		var sa, sb Figures
		for range keys {
			j := rng.Uint64() % uint64(len(keys))
			sa, sb = sa.plus(pa[j]), sb.plus(pb[j])
		}
		stats[i] = stat(sa, sb)
	}
	slices.Sort(stats)
	tail := (1 - level) / 2
	c.Level = level
	c.Low = stats[int(math.Floor(tail*float64(n)))]
	c.High = stats[max(0, int(math.Ceil((1-tail)*float64(n)))-1)]
	return c, nil
}
