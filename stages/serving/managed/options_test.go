package managed

import (
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
	_ "github.com/eaglet-dev/eaglet/stages/serving/backend/openai"
	_ "github.com/eaglet-dev/eaglet/stages/serving/backend/sglang"
	_ "github.com/eaglet-dev/eaglet/stages/serving/backend/simapi"
)

// parse parses a spec whose endpoints are endpoints (indented under
// `endpoints:`), with one generate stage on the first.
func parse(endpoints string, env map[string]string) (*specs.Spec, error) {
	src := "version: 1\nname: t\nendpoints:\n" + endpoints + `
stages:
  - {name: gen, uses: generate}
`
	return specs.Parse("spec.yaml", []byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

// TestCheck_Positions: every problem of a `launch:` is reported at once,
// each at the file:line:col of the key (or list item) it is about.
func TestCheck_Positions(t *testing.T) {
	for _, tc := range []struct {
		name, endpoints string
		want            []string
	}{
		{name: "issue's example", endpoints: `  target:
    api: sglang
    launch:
      argv: [python3, -m, sglang.launch_server, --model-path, "${MODEL_PATH}", --port, "{port}", --tp, "8"]
      replicas: 2
`},
		{name: "every problem at its key", endpoints: `  target:
    api: sglang
    launch:
      argv: [srv, --port, "{prot}"]
      replicas: 0
      restarts: -1
      gpu_hour_price: -2
      ready_timeout: soon
      job_id: x
      gpus: {a: 1}
`, want: []string{
			`spec.yaml:7:27: endpoint target: launch.argv.2: unknown placeholder {prot} (did you mean "port"?)`,
			`spec.yaml:7:7: endpoint target: launch.argv: no {port}`,
			`spec.yaml:8:7: endpoint target: launch.replicas: 0 replicas`,
			`spec.yaml:9:7: endpoint target: launch.restarts: -1 is not a count`,
			`spec.yaml:10:7: endpoint target: launch.gpu_hour_price: -2 dollars`,
			`spec.yaml:11:7: endpoint target: launch.ready_timeout: "soon"`,
			`spec.yaml:12:7: endpoint target: launch.job_id: applies to a scheduler's jobs`,
			`spec.yaml:13:13: gpus: want a list of device ids or a count`,
		}},
		{name: "unknown key", endpoints: `  target:
    api: openai
    launch: {argv: [srv, "{port}"], replica: 2}
`, want: []string{`spec.yaml:6:37: unknown key "replica" (did you mean "replicas"?)`}},
		{name: "urls and launch", endpoints: `  target:
    api: sglang
    urls: [http://h:1]
    launch: {argv: [srv, "{port}"]}
`, want: []string{"spec.yaml:6:5: endpoint target: give `urls:` or `launch:`, not both"}},
		{name: "no argv", endpoints: `  target:
    api: sglang
    launch: {replicas: 2}
`, want: []string{"spec.yaml:6:5: endpoint target: launch.argv: no command"}},
		{name: "devices that do not split", endpoints: `  target:
    api: sglang
    launch:
      argv: [srv, "{port}", "{gpus}"]
      replicas: 2
      gpus: [0, 1, 2]
`, want: []string{"spec.yaml:6:5: endpoint target: launch.gpus_per_replica: 3 devices (gpus) do not split evenly among 2 replicas"}},
		{name: "an api with no server", endpoints: `  target:
    api: sim
    launch: {argv: [srv, "{port}"]}
`, want: []string{"spec.yaml:6:5: endpoint target: api sim has no server to launch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.endpoints, map[string]string{"MODEL_PATH": "/models/qwen"})
			got := ""
			if err != nil {
				got = err.Error()
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no error %q in:\n%s", w, got)
				}
			}
			if n := strings.Count(got, "spec.yaml:"); n != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%s", n, len(tc.want), got)
			}
		})
	}
}
