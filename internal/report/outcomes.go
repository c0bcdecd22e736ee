package report

import (
	"context"

	"github.com/eaglet-dev/eaglet/state"
)

// instOutcome is what one instance's live records came to.
type instOutcome struct {
	stage, dataset                 string
	request                        bool
	done, dropped, skipped, failed int
	promptTok, complTok            int64
	drops, skips, failures         map[string]int
}

// outcomeCounts holds every stored instance's outcome by instance ID.
type outcomeCounts map[string]*instOutcome

func readOutcomes(ctx context.Context, st *state.Store, instances []Instance) (outcomeCounts, error) {
	o := outcomeCounts{}
	for _, i := range instances {
		c := &instOutcome{stage: i.Stage, dataset: i.Dataset, request: i.Endpoint != "",
			drops: map[string]int{}, skips: map[string]int{}, failures: map[string]int{}}
		o[i.ID] = c
		in, err := st.GetInstance(i.ID)
		if err != nil {
			return nil, err
		}
		if in == nil {
			continue
		}
		count := func(ctx context.Context, id string) ([]state.Count, error) { return st.Counts(id) }
		if c.request {
			count = st.AnswerCounts
		}
		counts, err := count(ctx, i.ID)
		if err != nil {
			return nil, err
		}
		for _, n := range counts {
			// The numbers are stages.Status; the report imports no stage code.
			switch n.Status {
			case 0:
				c.done += n.N
				c.promptTok += n.PromptTokens
				c.complTok += n.CompletionTokens
			case 1:
				c.dropped += n.N
				c.drops[n.Reason] += n.N
			case 2:
				c.skipped += n.N
				c.skips[n.Reason] += n.N
			case 3:
				c.failed += n.N
				c.failures[failureKind(n.Reason)] += n.N
			}
		}
		for reason, n := range in.Stats.Dropped {
			if reason == "duplicate" {
				continue
			}
			c.dropped += n
			c.drops[reason] += n
		}
	}
	return o, nil
}

// input counts the records an instance reads: its upstream's done ones.
func (o outcomeCounts) input(i Instance) int {
	n := 0
	for _, up := range i.Upstream {
		if c := o[up]; c != nil {
			n += c.done
		}
	}
	return n
}

// of adds up the outcomes of a dataset's instances (all instances for ""):
// answers, then what was dropped, skipped and failed, each with its stage.
func (o outcomeCounts) of(instances []Instance, dataset string) outcomeBars {
	var b outcomeBars
	for _, i := range instances {
		c := o[i.ID]
		if c == nil || (dataset != "" && i.Dataset != dataset) {
			continue
		}
		if c.request {
			b.answered += c.done
		}
		for r, n := range c.drops {
			b.add(i.Stage+": dropped: "+r, n)
		}
		for r, n := range c.skips {
			b.add(i.Stage+": skipped: "+r, n)
		}
		for r, n := range c.failures {
			b.add(i.Stage+": failed: "+r, n)
		}
	}
	return b
}

// outcomeBars is the outcome chart of a section.
type outcomeBars struct {
	answered int
	rest     map[string]int
}

func (b *outcomeBars) add(label string, n int) {
	if b.rest == nil {
		b.rest = map[string]int{}
	}
	b.rest[label] += n
}

func (b outcomeBars) bars() []bar {
	out := []bar{{Label: "answered", N: b.answered}}
	rest := labelled(b.rest, "")
	return append(out, rest...)
}
