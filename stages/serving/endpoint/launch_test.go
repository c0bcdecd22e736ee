package endpoint

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// TestLaunch_FailureStopsTheEndpoint: a server that exits before it
// answers stops the endpoint with the reason and its log's last lines,
// and the next record is refused at once rather than launching again.
func TestLaunch_FailureStopsTheEndpoint(t *testing.T) {
	dir := t.TempDir()
	src := `version: 1
name: t
state: state.db
endpoints:
  target:
    api: sglang
    launch: {argv: [sh, -c, 'echo "torch.OutOfMemoryError: CUDA out of memory"; exit 3', "{port}"]}
stages:
  - {name: gen, uses: generate}
`
	s, err := specs.Parse(filepath.Join(dir, "spec.yaml"), []byte(src), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, s.Endpoint("target"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	err = e.Launch(context.Background())
	var be *backend.Error
	if !errors.As(err, &be) || be.Kind != backend.Fatal {
		t.Fatalf("error %v (%T), want a fatal endpoint error", err, err)
	}
	for _, want := range []string{"endpoint target stopped: launch target: target replica 0: exited before it was ready (exit status 3)", "CUDA out of memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error:\n%v\nwant %q", err, want)
		}
	}
	if again := e.Launch(context.Background()); again != err {
		t.Errorf("second launch: %v, want the first's error again", again)
	}
}
