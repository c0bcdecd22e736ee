package report

import (
	"strings"
	"testing"
	"time"
)

// TestBuild_Launched renders a table of the launched endpoints' replicas:
// a row each, the endpoint's GPU-hours and dollars once; a spec with none
// has no such section.
func TestBuild_Launched(t *testing.T) {
	st, in := synthStore(t, synthRun{n: 10, start: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), gap: time.Second})
	for _, tc := range []struct {
		name     string
		launched []Launched
		want     []string
	}{
		{"none", nil, nil},
		{"two replicas", []Launched{{Endpoint: "target", GPUHours: 0.25, Dollars: 0.5, Replicas: []Replica{
			{Index: 0, State: "stopped", Uptime: 7 * time.Minute},
			{Index: 1, State: "lost", Restarts: 2, Uptime: 8 * time.Minute},
		}}}, []string{
			`<tr data-endpoint="target"><th>target</th><td>0</td><td>stopped</td><td>0</td><td>7m0s</td><td rowspan="2">0.25 ($0.50)</td></tr>`,
			`<tr data-endpoint="target"><th>target</th><td>1</td><td>lost</td><td>2</td><td>8m0s</td></tr>`,
		}},
	} {
		in.Launched = tc.launched
		html := renderPage(t, st, in)
		if got := strings.Contains(html, `id="launched"`); got != (tc.want != nil) {
			t.Errorf("%s: launched section shown: %v", tc.name, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(html, w) {
				t.Errorf("%s: no %s in the page's table", tc.name, w)
			}
		}
	}
}
