// Package merge is the stage that unites datasets, optionally weighted,
// shuffles them deterministically and writes the result as JSONL.
package merge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/internal/outfile"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

func init() {
	stages.Register(stages.Define("merge",
		"unite datasets (optionally weighted), shuffle with a seed, write JSONL",
		check, newMerge))
}

// Options of merge.
type Options struct {
	// Out is the JSONL file to write, relative to the spec.
	Out string `yaml:"out" doc:"required"`
	// ShuffleSeed orders the output; the same seed gives the same file.
	ShuffleSeed int `yaml:"shuffle_seed" doc:"seeds the order records are written in"`
	// Format is "messages" (id, dataset, messages, tools: ready to train),
	// "specforge" (id, conversations, tools, as SpecForge's data
	// preparation reads them) or "record" (the whole canonical record with
	// generation details).
	Format string `yaml:"format" default:"messages" enum:"messages|specforge|record" doc:"messages: {id, dataset, source_id, messages, tools} in OpenAI's field names, so a stock chat template renders it; specforge: {id, conversations, tools}, as SpecForge's data preparation reads; or record, the whole canonical record"`
	// Weights scale datasets by name: 0.5 keeps a seeded half, 2 repeats
	// every record twice. Unlisted datasets use their own `weight` (1).
	Weights map[string]float64 `yaml:"weights" doc:"per dataset; an entry overrides that dataset's weight"`
	// WeightsBy is "records" (a weight scales a dataset's records) or
	// "tokens" (weights are shares of the training tokens).
	WeightsBy string `yaml:"weights_by" default:"records" enum:"records (a weight scales a dataset's records)|tokens (weights are shares of the training tokens)" doc:"tokens: weights are shares of the training tokens, below"`
	// TotalTokens is, by tokens, the training tokens to write; by default
	// the most the mixture reaches without repeating a record.
	TotalTokens specs.Expr `yaml:"total_tokens" eval:"number" doc:"with weights_by: tokens"`
	// Eval holds a seeded share of the records out, in a file of their own.
	Eval *EvalOptions `yaml:"eval" doc:"{fraction, seed, out}: a seeded train/eval split, below"`
	// Overwrite lets merge replace an out that eaglet did not write (it is
	// kept as out.prev); without it such a file is a validation error.
	Overwrite bool `yaml:"overwrite" fp:"-" doc:"replace an out eaglet did not write"`
}

var (
	_ stages.FileWriter      = (*Options)(nil)
	_ stages.MoreFilesWriter = (*Options)(nil)
)

// WritesFile names out, so that no other stage may write the same file.
func (o *Options) WritesFile() (option, path string, overwrite bool) {
	return "out", o.Out, o.Overwrite
}

// WritesMoreFiles names the eval split's file, checked as out is.
func (o *Options) WritesMoreFiles() []stages.WrittenFile {
	if o.Eval == nil || o.Eval.Out == "" {
		return nil
	}
	return []stages.WrittenFile{{Option: []string{"eval", "out"}, Path: o.Eval.Out, Overwrite: o.Overwrite}}
}

func check(spec *specs.Spec, st *specs.Stage, opts *Options) error {
	if st.Foreach != "" {
		// Every instance would write the same out, the last one replacing
		// the others' records.
		return &specs.Error{Pos: st.KeyPos("foreach"), Msg: fmt.Sprintf("stage %s: remove `foreach:`; merge takes every dataset from its needs and writes one file, which per-dataset instances would each overwrite", st.Name)}
	}
	if opts.Out == "" {
		return &specs.Error{Pos: st.OptionPos("out"), Msg: fmt.Sprintf("stage %s: merge needs `out:` (the JSONL file to write)", st.Name)}
	}
	if !opts.TotalTokens.IsZero() && opts.WeightsBy != "tokens" {
		return &specs.Error{Pos: st.OptionPos("total_tokens"), Msg: fmt.Sprintf("stage %s: total_tokens needs `weights_by: tokens`", st.Name)}
	}
	if e := opts.Eval; e != nil {
		if !st.Written("eval", "fraction") {
			return &specs.Error{Pos: st.OptionPos("eval"), Msg: fmt.Sprintf("stage %s: eval needs `fraction:` (the share of the records held out, 0.02 for 2%%)", st.Name)}
		}
		if e.Fraction <= 0 || e.Fraction >= 1 {
			return &specs.Error{Pos: st.OptionPos("eval", "fraction"), Msg: fmt.Sprintf("stage %s: eval fraction is %g; use a share between 0 and 1 (0.02 holds out 2%% of the records)", st.Name, e.Fraction)}
		}
		if e.Out == "" {
			return &specs.Error{Pos: st.OptionPos("eval"), Msg: fmt.Sprintf("stage %s: eval needs `out:` (the JSONL file of held-out records)", st.Name)}
		}
	}
	var datasets []string
	for _, ds := range spec.Datasets {
		datasets = append(datasets, ds.Name)
	}
	// Sorted, so that of several bad weights the same one is reported every time.
	for _, name := range slices.Sorted(maps.Keys(opts.Weights)) {
		if spec.Dataset(name) == nil {
			return &specs.Error{Pos: st.OptionKeyPos("weights", name), Msg: fmt.Sprintf("stage %s: weights name unknown dataset %q%s; datasets: %v", st.Name, name, specs.Suggest(name, datasets), datasets)}
		}
		if opts.Weights[name] < 0 {
			return &specs.Error{Pos: st.OptionPos("weights", name), Msg: fmt.Sprintf("stage %s: weight of %s is negative", st.Name, name)}
		}
	}
	return nil
}

// Merge writes the union of its inputs.
type Merge struct {
	opts  *Options
	spec  *specs.Spec
	out   string
	stage string
	hash  string
	// evalOut is the eval split's file and evalHash its stamp once written.
	evalOut, evalHash string
	log               func(format string, args ...any)
	// mix is the mixture by tokens resolved against the input (weights_by: tokens).
	mix *mix
	// extra counts records passed on beyond the first of each (weights).
	extra int
}

var (
	_ stages.Batch     = (*Merge)(nil)
	_ stages.Orderer   = (*Merge)(nil)
	_ stages.Finisher  = (*Merge)(nil)
	_ stages.Estimator = (*Merge)(nil)
)

func newMerge(inst *stages.Instance, o *Options) (stages.Stage, error) {
	m := &Merge{opts: o, spec: inst.Spec, out: inst.Spec.Resolve(o.Out), stage: inst.ID, log: inst.Log}
	if o.Eval != nil {
		m.evalOut = inst.Spec.Resolve(o.Eval.Out)
	}
	if m.log == nil {
		m.log = func(string, ...any) {}
	}
	return m, nil
}

// Fingerprint is the weights the spec's datasets declare beyond the
// default, where merge's own weights do not override them: they change
// which records the merge keeps, so a changed weight reruns it. Without
// such a weight it is "", so merges fingerprint as before.
func (m *Merge) Fingerprint() (string, error) {
	var parts []string
	for _, ds := range m.spec.Datasets {
		if _, over := m.opts.Weights[ds.Name]; !over && ds.Weight != 1 {
			parts = append(parts, fmt.Sprintf("%s=%g", ds.Name, ds.Weight))
		}
	}
	if len(parts) == 0 {
		return "", nil
	}
	slices.Sort(parts)
	return "weights " + strings.Join(parts, ","), nil
}

func (m *Merge) weight(dataset string) float64 {
	if w, ok := m.opts.Weights[dataset]; ok {
		return w
	}
	if ds := m.spec.Dataset(dataset); ds != nil {
		return ds.Weight
	}
	return 1
}

// copies is how many times a record appears: the whole part of its weight,
// plus one more with probability of the fraction, decided by its key.
func (m *Merge) copies(rec *conv.Record) int {
	w := m.weight(rec.Dataset)
	whole, frac := math.Modf(w)
	n := int(whole)
	if frac > 0 && float64(stages.SeededHash(m.opts.ShuffleSeed, "weight", rec.Key)>>11)/float64(1<<53) < frac {
		n++
	}
	return n
}

// Run passes every record on as often as its weight says, and records
// held out for eval once.
func (m *Merge) Run(ctx context.Context, in stages.Input, out stages.Output) error {
	m.extra, m.mix = 0, nil
	if m.opts.WeightsBy == "tokens" {
		x, err := m.planMix(ctx, in)
		if err != nil {
			return err
		}
		m.mix = x
		m.log("%s", x.summary())
	}
	held := 0
	each := func(rec *conv.Record) error {
		var n int
		switch {
		case m.weight(rec.Dataset) <= 0:
		case m.inEval(rec.Key):
			held++
			return out.Keep(rec)
		case m.mix != nil:
			n = m.mix.copies(m, rec)
		default:
			n = m.copies(rec)
		}
		if n == 0 {
			reason := "weight"
			if m.mix != nil && m.weight(rec.Dataset) > 0 {
				reason = "over its dataset's share of tokens"
			}
			out.Drop(reason)
			return nil
		}
		if err := out.Keep(rec); err != nil {
			return err
		}
		key := rec.Key
		m.extra += n - 1
		for i := 2; i <= n; i++ {
			c := *rec
			c.Key = fmt.Sprintf("%s~%d", key, i)
			if err := out.Emit(&c); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if keys, ok := in.(stages.KeyInput); ok && m.byKey() {
		err = keys.EachKey(ctx, func(key, dataset string) error {
			return each(&conv.Record{Key: key, Dataset: dataset})
		})
	} else {
		err = in.Each(ctx, each)
	}
	if err == nil && m.opts.Eval != nil {
		m.log("eval split: %s held out for %s", human.Plural(held, "record"), m.opts.Eval.Out)
	}
	return err
}

// byKey reports whether Run decides every record by its key and dataset
// alone, so it need not read the records (stages.KeyInput): no record is
// copied (a weight above 1) and the mixture is not by tokens.
func (m *Merge) byKey() bool {
	if m.mix != nil {
		return false
	}
	for _, ds := range m.spec.Datasets {
		if m.weight(ds.Name) > 1 {
			return false
		}
	}
	return true
}

// Order shuffles: a record's rank is a seeded hash of its key, kept below
// 2^63 so it sorts the same as a signed SQLite integer, and never 0, which
// the store reserves for unordered rows.
func (m *Merge) Order(rec *conv.Record) uint64 {
	return stages.SeededHash(m.opts.ShuffleSeed, rec.Key)>>1 | 1
}

// Finish writes the JSONL file (and the eval split's) and records their stamps.
func (m *Merge) Finish(ctx context.Context, out stages.Input) error {
	if err := m.write(ctx, out, m.out, false); err != nil {
		return fmt.Errorf("write %s: %w", m.out, err)
	}
	var err error
	if m.hash, err = outfile.Stamp(m.out); err != nil || m.evalOut == "" {
		return err
	}
	if err := m.write(ctx, out, m.evalOut, true); err != nil {
		return fmt.Errorf("write %s: %w", m.evalOut, err)
	}
	m.evalHash, err = outfile.Stamp(m.evalOut)
	return err
}

// write writes the records of one side of the split (all of them without
// one) to path through outfile: whole or not at all, the previous version
// kept as path.prev, never over a file eaglet did not write.
func (m *Merge) write(ctx context.Context, out stages.Input, path string, eval bool) error {
	spec, err := filepath.Abs(m.spec.Path)
	if err != nil {
		spec = m.spec.Path
	}
	o := outfile.Options{Spec: spec, Stage: m.stage, Overwrite: m.opts.Overwrite}
	return outfile.Write(path, o, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return out.Each(ctx, func(rec *conv.Record) error {
			if m.inEval(rec.Key) != eval {
				return nil
			}
			switch m.opts.Format {
			case "record":
				return enc.Encode(rec)
			case "specforge":
				return enc.Encode(conv.NewSpecForgeRow(rec.Key, rec.Conversation(), rec.Tools))
			}
			return enc.Encode(toLine(rec))
		})
	})
}

// Report names the written file so a deleted or edited output is remade,
// and counts the extra copies weights made, for status's accounting.
func (m *Merge) Report(s *stages.Report) {
	s.Copies = m.extra
	if m.hash != "" {
		s.Output, s.OutputHash = m.out, m.hash
	}
	if m.evalHash != "" {
		s.MoreOutputs = map[string]string{m.evalOut: m.evalHash}
	}
}

// Estimate weights each dataset's part of the input as Run does. A
// fractional weight keeps that share only on average, so the count is then
// a guess. Without a split by dataset it can only pass the input on.
func (m *Merge) Estimate(in stages.Estimate) (stages.Estimate, error) {
	out := in
	out.Note = "writes " + m.opts.Out
	if in.ByDataset == nil {
		for _, ds := range m.spec.Datasets {
			if m.weight(ds.Name) != 1 {
				out.Note = "weights not applied, the input is not split by dataset; " + out.Note
				break
			}
		}
		return out, nil
	}
	out.Records, out.PromptTokens, out.CompletionTokens, out.Bytes = 0, 0, 0, 0
	scale := m.weight
	if m.opts.WeightsBy == "tokens" {
		scale = m.estimateMix(in.ByDataset)
		out.Exact = false
	}
	if m.opts.Eval != nil {
		out.Note += fmt.Sprintf(" and %s (~%g%% held out)", m.opts.Eval.Out, 100*m.opts.Eval.Fraction)
	}
	var weighted []string
	for _, ds := range m.spec.Datasets {
		part, ok := in.ByDataset[ds.Name]
		if !ok {
			continue
		}
		w := scale(ds.Name)
		out.Records += int(math.Round(w * float64(part.Records)))
		out.PromptTokens += int64(math.Round(w * float64(part.PromptTokens)))
		out.CompletionTokens += int64(math.Round(w * float64(part.CompletionTokens)))
		out.Bytes += int64(math.Round(w * float64(part.Bytes)))
		if _, frac := math.Modf(w); frac != 0 {
			out.Exact = false
		}
		if w != 1 {
			weighted = append(weighted, fmt.Sprintf("%s ×%.3g", ds.Name, w))
		}
	}
	if len(weighted) > 0 {
		out.Note = strings.Join(weighted, ", ") + "; " + out.Note
	}
	return out, nil
}
