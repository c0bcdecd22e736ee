package handoff

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/internal/draftvocab"
	"github.com/eaglet-dev/eaglet/specs"
)

// DraftVocab asks for the drafter's reduced vocabulary, chosen by how
// often each id is supervised in the rows written, as EAGLE-3 trainers
// otherwise recompute it from those rows.
type DraftVocab struct {
	// Size is how many target ids the draft vocabulary keeps.
	Size int `yaml:"size"`
	// TargetSize is the length of t2d: the target's vocab_size in
	// config.json by default, which may exceed the tokenizer's (Qwen3
	// pads 151,669 ids to 151,936) and is what the trainers check.
	TargetSize int `yaml:"target_size"`
}

// checkDraftVocab validates draft_vocab and fills target_size from the
// model's config.json when left out; bad reports each problem.
func checkDraftVocab(spec *specs.Spec, st *specs.Stage, o *Options, bad func(specs.Pos, string, ...any)) {
	dv := o.DraftVocab
	if dv == nil {
		return
	}
	if o.Tokenizer == "" {
		bad(st.OptionPos("draft_vocab"), "draft_vocab counts the supervised ids, which needs the target's tokenizer: add a tokenize stage upstream, or `tokenizer:` to the handoff")
	}
	if dv.TargetSize < 0 || dv.TargetSize == 0 && st.Written("draft_vocab", "target_size") {
		bad(st.OptionPos("draft_vocab", "target_size"), "draft_vocab target_size is %d; use the target's vocab_size (leave the key out for config.json's)", dv.TargetSize)
		return
	}
	if dv.TargetSize == 0 && o.Tokenizer != "" {
		dir := spec.Resolve(o.Tokenizer)
		if dv.TargetSize = readModelConfig(dir).VocabSize; dv.TargetSize == 0 {
			bad(st.OptionPos("draft_vocab"), "draft_vocab needs target_size: %s has no config.json with vocab_size (the length of the trainers' t2d)", dir)
			return
		}
	}
	switch {
	case !st.Written("draft_vocab", "size"):
		bad(st.OptionPos("draft_vocab"), "draft_vocab needs `size:`, the ids the drafter keeps (32000 is usual)")
	case dv.Size < 1:
		bad(st.OptionPos("draft_vocab", "size"), "draft_vocab size is %d; use 1 or more (32000 is usual)", dv.Size)
	case dv.TargetSize > 0 && dv.Size >= dv.TargetSize:
		bad(st.OptionPos("draft_vocab", "size"), "draft_vocab size is %d, not below the target's %d ids: the trainers then use the full vocabulary and no mapping", dv.Size, dv.TargetSize)
	}
}

// vocabInfo is the manifest's account of the draft vocabulary.
type vocabInfo struct {
	Size       int `json:"size"`
	TargetSize int `json:"target_size"`
	// Coverage is the share of supervised tokens whose id the draft
	// vocabulary keeps: CoveredTokens of SupervisedTokens.
	Coverage         float64 `json:"coverage"`
	CoveredTokens    int64   `json:"covered_tokens"`
	SupervisedTokens int64   `json:"supervised_tokens"`
	// DistinctIDs counts the ids supervised at least once; fewer than
	// Size leaves the rest of the vocabulary to the lowest unused ids.
	DistinctIDs int    `json:"distinct_ids"`
	D2T         string `json:"d2t"`
	T2D         string `json:"t2d"`
	TokenFreq   string `json:"token_freq"`
}

// buildVocab chooses the draft vocabulary from the counted ids, and says
// what the manifest records of it.
func buildVocab(dv *DraftVocab, counts draftvocab.Counts) (*draftvocab.Mapping, *vocabInfo, error) {
	m, err := draftvocab.Build(counts, dv.Size, dv.TargetSize)
	if err != nil {
		return nil, nil, fmt.Errorf("draft_vocab: %w", err)
	}
	return m, &vocabInfo{Size: m.Size, TargetSize: m.TargetSize, Coverage: m.Coverage(), CoveredTokens: m.Covered,
		SupervisedTokens: m.Total, DistinctIDs: m.Distinct,
		D2T: draftvocab.D2TFile, T2D: draftvocab.T2DFile, TokenFreq: draftvocab.TokenFreqFile}, nil
}

// String says what the draft vocabulary keeps and covers, for the log and
// the data card.
func (v *vocabInfo) String() string {
	return fmt.Sprintf("%d of %d ids, covering %.2f%% of %d supervised tokens (%s, %s, %s)",
		v.Size, v.TargetSize, 100*v.Coverage, v.SupervisedTokens, v.D2T, v.T2D, v.TokenFreq)
}
