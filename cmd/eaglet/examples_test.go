package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/stages/conv"
	"github.com/eaglet-dev/eaglet/stages/generate/sim"
	"github.com/eaglet-dev/eaglet/stages/generate/sim/server"
	"github.com/eaglet-dev/eaglet/stages/generate/sim/simtest"
)

// TestExamples runs the example specs end to end against the simulated
// server over HTTP, with faults on: every record ends done, dropped or
// skipped, the output has the target's answers, and the API key appears
// nowhere eaglet writes.
func TestExamples(t *testing.T) {
	const key = "sk-or-v1-test-secret-0123456789"
	faults := server.Faults{Seed: 3, Error500: 0.05, RateLimit: 0.05, Truncate: 0.03, Drop: 0.02, RetryAfter: 50 * time.Millisecond}
	tests := []struct {
		spec string
		env  func(url string) map[string]string
	}{
		{"sglang.yaml", func(url string) map[string]string { return map[string]string{"SGLANG_URL": url} }},
		{"openrouter.yaml", func(url string) map[string]string {
			return map[string]string{"OPENAI_BASE_URL": url + "/v1", "OPENROUTER_API_KEY": key}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 200}), APIKey: apiKeyFor(tt.spec, key), Faults: faults})
			out := t.TempDir()
			vars := tt.env(url)
			vars["OUT"] = out
			var stdout, stderr bytes.Buffer
			env := &cmdEnv{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] },
				lookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
			if code := runMain(env, []string{"run", "../../specs/examples/" + tt.spec}); code != 0 {
				t.Fatalf("run exited %d:\n%s", code, stderr.String())
			}
			lines := readJSONL(t, filepath.Join(out, "train.jsonl"))
			if len(lines) < 100 {
				t.Fatalf("train.jsonl has %d records; want most of the 140 prompts", len(lines))
			}
			for _, l := range lines {
				msgs := l.Messages
				if len(msgs) < 2 || msgs[len(msgs)-1].Role != conv.Assistant || msgs[len(msgs)-1].Content == "" {
					t.Fatalf("record %s does not end with the generated answer: %+v", l.ID, msgs)
				}
			}
			runMain(env, []string{"status", "--json", "../../specs/examples/" + tt.spec})
			if strings.Contains(stdout.String(), `"failed": 1`) {
				t.Errorf("some records failed despite retries:\n%s", stdout.String())
			}
			for _, f := range []string{"state.db", "state.db-wal", "train.jsonl"} {
				if b, err := os.ReadFile(filepath.Join(out, f)); err == nil && bytes.Contains(b, []byte(key)) {
					t.Errorf("the API key was written to %s", f)
				}
			}
			if strings.Contains(stdout.String()+stderr.String(), key) {
				t.Error("the API key was printed")
			}
		})
	}
}

func apiKeyFor(spec, key string) string {
	if spec == "openrouter.yaml" {
		return key
	}
	return ""
}

type trainLine struct {
	ID       string         `json:"id"`
	Messages []conv.Message `json:"messages"`
}

func readJSONL(t *testing.T, path string) []trainLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []trainLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l trainLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}
