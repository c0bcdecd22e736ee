package generate

import (
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/serving/endpoint"
)

// The progress line shows what auto concurrency is at, the figure a user
// would put in the next spec.
func TestProgress_ShowsAutoConcurrency(t *testing.T) {
	ep := func(c specs.Concurrency) *endpoint.Endpoint {
		t.Helper()
		e, err := endpoint.New(&specs.Spec{}, &specs.Endpoint{Name: "target", API: "sim", Concurrency: c, MaxConcurrency: 64}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	g := &Generate{answerer: answerer{ep: ep(specs.Concurrency{Auto: true})}}
	if got := g.Progress(); !strings.Contains(got, "concurrency 16 (auto, endpoint target)") {
		t.Errorf("progress %q; want the auto concurrency", got)
	}
	g.ep = ep(specs.Concurrency{N: 8})
	if got := g.Progress(); strings.Contains(got, "concurrency") {
		t.Errorf("progress %q names a fixed concurrency", got)
	}
}
