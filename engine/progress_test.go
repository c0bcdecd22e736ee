package engine

import (
	"io"
	"strings"
	"testing"
	"time"

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
			"1 done (1 reused), 60 kept from before, 1 skipped, 1 failed, 12k completion tokens (12k of them reused)"},
		{"reused answers' tokens apart from those generated", 0,
			[]state.Item{item(stages.Done, true, 16800), item(stages.Done, false, 6100)}, 0,
			"2 done (1 reused), 22.9k completion tokens (16.8k of them reused)"},
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

// TestProgress_RateOfGeneratedTokens: the tok/s of a running instance, and
// of the line over all of them, is the server's speed: answers reused
// from earlier runs arrive at once and would make it look many times
// faster than it is.
func TestProgress_RateOfGeneratedTokens(t *testing.T) {
	a, b := &Node{ID: "generate[a]"}, &Node{ID: "generate[b]"}
	p := newProgress(io.Discard, false, 0, []*Node{a, b})
	start := time.Now()
	for _, n := range []*Node{a, b} {
		p.begin(n, 100, 0, 0)
		p.st[n].started = start
	}
	p.add(a, state.Item{Status: int(stages.Done), Reused: true, CompletionTokens: 90_000})
	p.add(a, state.Item{Status: int(stages.Done), CompletionTokens: 1_000})
	p.add(b, state.Item{Status: int(stages.Done), CompletionTokens: 3_000})
	now := start.Add(10 * time.Second)
	if got := p.st[a].status(now); !strings.Contains(got, "  100 tok/s") {
		t.Errorf("status = %q; want 100 tok/s (1,000 tokens generated in 10 s; 90,000 reused)", got)
	}
	if got := p.overall(now); !strings.Contains(got, ", 400 tok/s") {
		t.Errorf("overall = %q; want 400 tok/s (4,000 tokens generated in 10 s)", got)
	}
}
