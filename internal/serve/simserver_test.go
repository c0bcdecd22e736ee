package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// eagletBinary builds eaglet once for the tests that launch the real
// `eaglet sim-server`: on first use rather than in TestMain, so -short
// runs, which skip them, do not pay for the build.
var eagletBinary = sync.OnceValues(func() (string, error) {
	eaglet := filepath.Join(bin, "eaglet")
	cmd := exec.Command("go", "build", "-o", eaglet, "github.com/eaglet-dev/eaglet/cmd/eaglet")
	cmd.Stderr = os.Stderr
	return eaglet, cmd.Run()
})

// TestStart_SimServer: the recipe of docs/managed-endpoints.md, with
// eaglet's own simulator as the server: two replicas on ports of their
// own, ready, generating, and gone after Close.
func TestStart_SimServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds eaglet")
	}
	eaglet, err := eagletBinary()
	if err != nil {
		t.Fatalf("build eaglet: %v", err)
	}
	for _, api := range []API{SGLang, OpenAI} {
		t.Run(string(api), func(t *testing.T) {
			t.Parallel()
			g, err := start(t, context.Background(), testConfig(t, api, Options{
				Argv: []string{eaglet, "sim-server", "-addr", "127.0.0.1:{port}", "-seed", "{replica}"}, Replicas: 2}))
			if err != nil {
				t.Fatal(err)
			}
			if u := g.URLs(); u[0] == u[1] {
				t.Errorf("replicas share %s", u[0])
			}
			for _, r := range g.Replicas() {
				if err := r.Generates(context.Background(), 10*time.Second); err != nil {
					t.Errorf("replica %d: %v", r.Index, err)
				}
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			for _, r := range g.Replicas() {
				if running(r.PID) {
					t.Errorf("replica %d (pid %d) still running after Close", r.Index, r.PID)
				}
			}
		})
	}
}
