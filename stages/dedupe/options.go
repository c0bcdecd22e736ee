package dedupe

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"

	"github.com/eaglet-dev/eaglet/specs"
)

// Defaults of the options.
const (
	defaultNGram = 13
	// examplesPerKind is how many dropped or flagged records of each kind
	// status --json shows.
	examplesPerKind = 3
	// maxHeads bounds the comparisons a record makes in one LSH bucket:
	// it is compared with the first few distinct groups found there.
	maxHeads = 8
)

// Options of dedupe.
type Options struct {
	// Near turns near-duplicate detection off when false (exact only).
	Near *bool `yaml:"near" default:"true" doc:"false: exact duplicates only"`
	// Threshold is the estimated Jaccard similarity of word shingles from
	// which two prompts are near duplicates.
	Threshold float64 `yaml:"threshold" default:"0.8" doc:"Jaccard similarity of near duplicates"`
	// Shingle is the number of words in a shingle.
	Shingle int `yaml:"shingle" default:"5" doc:"words"`
	// NumPerm is the number of MinHash permutations.
	NumPerm int `yaml:"num_perm" default:"128" doc:"MinHash permutations"`
	// Priority lists datasets in the order their copies survive; datasets
	// it leaves out follow in the spec's order.
	Priority []string `yaml:"priority" doc:"datasets whose copies survive first; the rest follow in the spec's order"`
	// Decontaminate drops or flags prompts sharing an n-gram with a benchmark.
	Decontaminate *Decontaminate `yaml:"decontaminate" doc:"{benchmarks, ngram, action, min_words}, below"`
}

// Decontaminate lists the benchmarks to keep out of the training data.
type Decontaminate struct {
	// Benchmarks are files in any shape load reads, relative to the spec.
	Benchmarks []string `yaml:"benchmarks"`
	// NGram is the number of consecutive words a prompt must share with a
	// benchmark prompt (default 13, as GPT-3 and NeMo-Skills).
	NGram int `yaml:"ngram"`
	// Action is drop (the default) or flag (pass on and count).
	Action string `yaml:"action" enum:"drop|flag"`
	// MinWords leaves out benchmark prompts of fewer words: a prompt
	// shorter than ngram is matched whole, and a very short one ("What is
	// 2+2?") can be in many training prompts that are not copies of it.
	MinWords int `yaml:"min_words"`
}

func check(spec *specs.Spec, st *specs.Stage, opts *Options) error {
	var errs *multierror.Error
	bad := func(pos specs.Pos, format string, args ...any) {
		errs = multierror.Append(errs, &specs.Error{Pos: pos, Msg: fmt.Sprintf("stage %s: ", st.Name) + fmt.Sprintf(format, args...)})
	}
	// The values the stage runs with: a zero written is judged as written.
	run := specs.WithDefaults(opts, st.With)
	if t := run.Threshold; t <= 0 || t > 1 {
		bad(st.OptionPos("threshold"), "threshold is %v; use a Jaccard similarity above 0, at most 1 (0.8 is usual)", t)
	}
	if run.Shingle < 1 {
		bad(st.OptionPos("shingle"), "shingle is %d; use a number of words, 1 or more (5 is usual)", run.Shingle)
	}
	if p := run.NumPerm; p < 16 || p > 1024 {
		bad(st.OptionPos("num_perm"), "num_perm is %d; use 16 to 1024 (128 is usual)", p)
	}
	var names []string
	for _, ds := range spec.Datasets {
		names = append(names, ds.Name)
	}
	for i, name := range opts.Priority {
		switch {
		case spec.Dataset(name) == nil:
			bad(itemPos(st, i, "priority"), "priority names dataset %q, which the spec does not have%s; datasets: %s",
				name, specs.Suggest(name, names), strings.Join(names, ", "))
		case slices.Index(opts.Priority, name) < i:
			bad(itemPos(st, i, "priority"), "priority names dataset %s twice; remove one", name)
		}
	}
	if dc := opts.Decontaminate; dc != nil {
		if len(dc.Benchmarks) == 0 {
			bad(st.OptionPos("decontaminate"), "decontaminate needs `benchmarks:`, a list of benchmark files (any shape load reads)")
		}
		for i, b := range dc.Benchmarks {
			if _, err := statFile(spec.Resolve(b)); err != nil {
				bad(itemPos(st, i, "decontaminate", "benchmarks"), "benchmark %s: %v; give a file relative to the spec", b, err)
			}
		}
		if dc.NGram < 0 || dc.NGram == 0 && st.Written("decontaminate", "ngram") {
			bad(st.OptionPos("decontaminate", "ngram"), "ngram is %d; use a number of words, 1 or more (13 is usual)", dc.NGram)
		}
		if dc.MinWords < 0 {
			bad(st.OptionPos("decontaminate", "min_words"), "min_words is %d; use a number of words, 0 (every benchmark prompt) or more", dc.MinWords)
		}
	}
	return errs.ErrorOrNil()
}

// itemPos returns where the i-th item of the list option at path is, or
// the list's position when it cannot be found.
func itemPos(st *specs.Stage, i int, path ...string) specs.Pos {
	n := st.With
	for _, key := range path {
		var next *yaml.Node
		for j := 0; n != nil && n.Kind == yaml.MappingNode && j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == key {
				next = n.Content[j+1]
			}
		}
		n = next
	}
	if n == nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
		return st.OptionPos(path...)
	}
	return specs.Pos{File: st.Pos.File, Line: n.Content[i].Line, Col: n.Content[i].Column}
}
