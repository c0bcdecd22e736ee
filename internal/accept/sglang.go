package accept

import (
	"encoding/json"
	"fmt"
	"math"
)

// SGLang's names for the accepted and proposed draft-token counts, newest
// first: spec_num_correct_drafts and spec_num_proposed_drafts (with
// spec_accepted_drafts and spec_proposed_drafts kept as aliases for a
// release), and SGLang 0.5's spec_accept_token_num and
// spec_draft_token_num. Likewise the histogram of verify steps by drafts
// accepted. SGLang computes its ratios (spec_accept_length, completion
// tokens over verify steps; spec_accept_rate, accepted over proposed)
// from these counts, so they are recomputed here, never read.
var (
	acceptedNames  = []string{"spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num"}
	draftedNames   = []string{"spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num"}
	histogramNames = []string{"spec_correct_drafts_histogram", "spec_accept_histogram"}
)

// ParseSGLang reads a finished request's meta_info, as SGLang returns it
// on /generate (a stream's last event) and, with return_meta_info, in a
// chat choice. ok is false when it reports no speculative decoding (no
// spec_verify_ct: a server without --speculative-algorithm, or a stream's
// unfinished event); the measurement then holds the completion tokens
// alone.
func ParseSGLang(metaInfo []byte) (m Measurement, ok bool, err error) {
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(metaInfo, &meta); err != nil {
		return m, false, fmt.Errorf("sglang meta_info: %w", err)
	}
	count := func(name string) (int, bool, error) {
		raw, found := meta[name]
		if !found || string(raw) == "null" {
			return 0, false, nil
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil || v < 0 || v != math.Trunc(v) {
			return 0, false, fmt.Errorf("sglang meta_info %s: %s is not a count", name, raw)
		}
		return int(v), true, nil
	}
	if m.CompletionTokens, _, err = count("completion_tokens"); err != nil {
		return m, false, err
	}
	if m.Verify, ok, err = count("spec_verify_ct"); err != nil || !ok {
		return m, false, err
	}
	accepted, drafted, err := firstPair(count, acceptedNames, draftedNames)
	if err != nil {
		return m, false, err
	}
	if accepted >= 0 {
		m.Accepted, m.Drafted, m.Counted = accepted, drafted, true
	}
	for _, name := range histogramNames {
		raw, found := meta[name]
		if !found || string(raw) == "null" {
			continue
		}
		var hist []int
		if err := json.Unmarshal(raw, &hist); err != nil {
			return m, false, fmt.Errorf("sglang meta_info %s: %w", name, err)
		}
		m.PerPosition = perPosition(hist)
		break
	}
	return m, true, nil
}

// firstPair returns the counts under the first pair of names the
// meta_info holds, one version's names never mixed with another's;
// accepted is -1 when none is there.
func firstPair(count func(string) (int, bool, error), accepted, drafted []string) (int, int, error) {
	for i := range accepted {
		a, okA, err := count(accepted[i])
		if err != nil {
			return 0, 0, err
		}
		d, okD, err := count(drafted[i])
		if err != nil {
			return 0, 0, err
		}
		if okA && okD {
			return a, d, nil
		}
	}
	return -1, 0, nil
}

// perPosition turns a histogram of verify steps by drafts accepted
// (hist[k] steps accepted k) into steps accepting each position, as vLLM
// counts: a step that accepted k drafts accepted positions 0 to k-1.
func perPosition(hist []int) []int {
	if len(hist) < 2 {
		return nil
	}
	out := make([]int, len(hist)-1)
	for k := len(hist) - 1; k >= 1; k-- {
		for j := range k {
			out[j] += hist[k]
		}
	}
	return out
}
