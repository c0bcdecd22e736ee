package handoff

import (
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/stages"
)

// TestEstimate_HiddenStatesAtBothDTypes: plan prices hidden states at the
// dtype extraction stores and at the other one, fp8 with speculators'
// per-token fp32 scale (hidden_states fp8 [seq, layers, hidden] beside
// hidden_states_scales fp32 [seq, 1, 1]).
func TestEstimate_HiddenStatesAtBothDTypes(t *testing.T) {
	const tokens = 1_000_000
	in := stages.Estimate{PromptTokens: 400_000, CompletionTokens: 600_000}
	for _, tc := range []struct {
		name       string
		hs         HiddenStates
		disk       int64
		dtype      string
		note, also string
	}{
		{"bf16 by default", HiddenStates{HiddenSize: 4096}, 2 * tokens * 4096 * 4, "bf16",
			"hidden states ≈ 30.5 GiB at bf16 (1000000 tokens × 4096 × 4 layers × 2 bytes)",
			"15.3 GiB at fp8 with per-token scales (speculators' fp8 backend)"},
		{"fp8", HiddenStates{HiddenSize: 4096, DType: "fp8"}, tokens*4096*4 + tokens*4, "fp8",
			"hidden states ≈ 15.3 GiB at fp8 (1000000 tokens × 4096 × 4 layers × 1 byte, + a 4-byte scale a token)",
			"30.5 GiB at bf16"},
		{"fp32 by bytes", HiddenStates{HiddenSize: 7168, Layers: 3, Bytes: 4}, tokens * 7168 * 3 * 4, "4-byte values",
			"hidden states ≈ 80.1 GiB at 4-byte values (1000000 tokens × 7168 × 3 layers × 4 bytes)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handoff{opts: &Options{Out: "out", Shards: 1, Format: FormatSpeculators, HiddenStates: &tc.hs}}
			e := h.hiddenStates(tokens)
			if e == nil || e.DiskBytes != tc.disk || e.DType != tc.dtype {
				t.Fatalf("estimate %+v; want %d bytes at %s", e, tc.disk, tc.dtype)
			}
			values := int64(tokens) * int64(tc.hs.HiddenSize) * int64(e.Layers)
			if e.BF16Bytes != 2*values || e.FP8Bytes != values+4*tokens {
				t.Errorf("bf16 %d, fp8 %d; want %d and %d", e.BF16Bytes, e.FP8Bytes, 2*values, values+4*tokens)
			}
			out, err := h.Estimate(in)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.Note, tc.note) || !strings.Contains(out.Note, tc.also) {
				t.Errorf("plan says %q; want %q and %q", out.Note, tc.note, tc.also)
			}
		})
	}
}
