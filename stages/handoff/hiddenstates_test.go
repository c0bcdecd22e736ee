package handoff_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestCheck_HiddenStates: a dtype SpecForge's extraction cannot store,
// dtype beside bytes, and an unknown dtype are refused at their lines.
func TestCheck_HiddenStates(t *testing.T) {
	for _, tc := range []struct {
		name, with string
		line       int
		want       string
	}{
		{"fp8 for SpecForge", "format: specforge\n      hidden_states: {hidden_size: 8, dtype: fp8}", 13,
			"SpecForge's extraction stores bf16; use dtype: bf16, or format: speculators"},
		{"dtype and bytes", "format: messages\n      hidden_states: {hidden_size: 8, dtype: bf16, bytes: 4}", 13, "both dtype (bf16) and bytes (4); keep one"},
		{"unknown dtype", "format: messages\n      hidden_states: {hidden_size: 8, dtype: fp16}", 13, `"fp16" (did you mean "bf16"?); use bf16 or fp8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := workdir(t)
			spec := fmt.Sprintf(`version: 1
name: x
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - name: handoff
    uses: handoff
    needs: [load]
    with:
      out: out
      %s
`, tc.with)
			err := enginetest.LoadErr(t, dir, spec)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprintf("spec.yaml:%d:", tc.line)) {
				t.Fatalf("error %v; want %q at line %d", err, tc.want, tc.line)
			}
		})
	}
}
