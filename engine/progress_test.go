package engine

import (
	"io"
	"testing"

	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// TestProgress_Summary: a finished line counts what was passed on, in the
// words status uses, with integer tokens.
func TestProgress_Summary(t *testing.T) {
	item := func(st stages.Status, reused bool, ctok int) state.Item {
		return state.Item{Status: int(st), Reused: reused, CompletionTokens: ctok, PromptTokens: 5}
	}
	tests := []struct {
		name  string
		kept  int
		items []state.Item
		dups  int
		want  string
	}{
		{"a filter's dropped records take their tokens", 0,
			[]state.Item{item(stages.Done, false, 40), item(stages.Dropped, false, 33), item(stages.Done, false, 33)}, 0,
			"2 done, 1 dropped, 73 completion tokens"},
		{"duplicates are not done twice", 0,
			[]state.Item{item(stages.Done, false, 0), item(stages.Done, false, 0), item(stages.Done, false, 0)}, 1,
			"2 done, 1 duplicate"},
		{"reused and kept", 60,
			[]state.Item{item(stages.Done, true, 12000), item(stages.Failed, false, 0), item(stages.Skipped, false, 0)}, 0,
			"1 done (1 reused), 60 kept from before, 1 skipped, 1 failed, 12.0k completion tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Node{ID: "x"}
			p := newProgress(io.Discard, false, 0, []*Node{n})
			p.begin(n, len(tt.items), 0, tt.kept)
			for _, it := range tt.items {
				p.add(n, it)
			}
			if tt.dups > 0 {
				p.duplicates(n, tt.dups)
			}
			if got := p.st[n].summary(); got != tt.want {
				t.Errorf("summary = %q; want %q", got, tt.want)
			}
		})
	}
}
