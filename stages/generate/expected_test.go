package generate

import (
	"errors"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/endpoint"
)

// TestExpectedTokens_FairSampleFirst: plan prices the records left at the
// mean of the answers sent early enough that none was lost in flight when
// a run stopped (Usage.Finished), once there are enough of them; with too
// few, or records of several answers (which keep one answer's timing), or
// when it cannot be read, at the mean of every answer as before.
func TestExpectedTokens_FairSampleFirst(t *testing.T) {
	g := &Generate{answerer: answerer{maxTokens: 4096, ep: &endpoint.Endpoint{MeanTokens: 1000}}, ds: &specs.Dataset{Name: "d", EstCompletionTokens: 700}}
	fair := func(n, tokens int64, err error) func(int) (int64, int64, error) {
		return func(longest int) (int64, int64, error) {
			if longest != 4096 {
				t.Errorf("Finished asked about answers of %d tokens; want max_tokens, 4096", longest)
			}
			return n, tokens, err
		}
	}
	// 100 answers that finished, short on the whole: 800 tokens each.
	all := stages.Usage{Records: 100, CompletionTokens: 80_000}
	tests := []struct {
		name     string
		finished func(int) (int64, int64, error)
		answers  float64
		want     int
	}{
		{"no timings", nil, 1, 800},
		{"a fair sample", fair(40, 40_000, nil), 1, 1000},
		{"too few sent early enough", fair(measured-1, 19_000, nil), 1, 800},
		{"records of two answers", fair(40, 40_000, nil), 2, 800},
		{"unreadable", fair(40, 40_000, errors.New("disk I/O error")), 1, 800},
	}
	for _, tt := range tests {
		u := all
		u.Finished = tt.finished
		if got, _ := g.expectedTokens(u, tt.answers); got != tt.want {
			t.Errorf("%s: %d tokens a record; want %d", tt.name, got, tt.want)
		}
	}
}
