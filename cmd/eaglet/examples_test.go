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

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

// TestExamples runs the example specs end to end against the simulated
// server over HTTP, with faults on: every record ends done, dropped or
// skipped, the output has the target's answers, and the API key appears
// nowhere eaglet writes. launched.yaml starts its servers itself, the
// real `eaglet sim-server` with its defaults and no faults. The runs spend
// most of their time in the retries' backoff, so they wait beside the
// package's other tests.
func TestExamples(t *testing.T) {
	t.Parallel()
	const key = "sk-or-v1-test-secret-0123456789"
	faults := server.Faults{Seed: 3, Error500: 0.05, RateLimit: 0.05, Truncate: 0.03, Drop: 0.02, RetryAfter: 50 * time.Millisecond}
	tests := []struct {
		spec string
		env  func(url string) map[string]string
		// ids is set when the prompts go as token ids, launched when the
		// spec starts its own servers.
		ids, launched bool
	}{
		{spec: "sglang.yaml", env: func(url string) map[string]string { return map[string]string{"SGLANG_URL": url} }, ids: true},
		{spec: "openrouter.yaml", env: func(url string) map[string]string {
			return map[string]string{"OPENAI_BASE_URL": url + "/v1", "OPENROUTER_API_KEY": key}
		}},
		{spec: "launched.yaml", env: func(string) map[string]string { return map[string]string{} }, ids: true, launched: true},
	}
	tok, err := tokenizer.Load("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.New(tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			t.Parallel()
			model := sim.New(sim.Config{Seed: 1, MeanTokens: 200})
			var vars map[string]string
			if tt.launched {
				if testing.Short() {
					t.Skip("builds eaglet, whose sim-server the spec launches")
				}
				model = sim.New(sim.Config{}) // sim-server's defaults
				vars = tt.env("")
				vars["EAGLET"] = buildEaglet(t)
			} else {
				vars = tt.env(simtest.Serve(t, server.Config{Model: model, APIKey: apiKeyFor(tt.spec, key), Faults: faults}))
			}
			out := t.TempDir()
			vars["OUT"] = out
			var stdout, stderr bytes.Buffer
			env := &cmdEnv{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] },
				lookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
			if code := runMain(env, []string{"run", "--allow-outside", "../../specs/examples/" + tt.spec}); code != 0 {
				t.Fatalf("run exited %d:\n%s", code, stderr.String())
			}
			lines := readJSONL(t, filepath.Join(out, "train.jsonl"))
			if len(lines) < 100 {
				t.Fatalf("train.jsonl has %d records; want most of the 140 prompts", len(lines))
			}
			seen := map[string]bool{}
			for _, l := range lines {
				msgs := l.Messages
				if len(msgs) < 2 || msgs[len(msgs)-1].Role != conv.Assistant || msgs[len(msgs)-1].Content == "" {
					t.Fatalf("record %s does not end with the generated answer: %+v", l.ID, msgs)
				}
				if seen[l.ID] {
					t.Fatalf("record %s is in the output twice", l.ID)
				}
				seen[l.ID] = true
				// The stored answer is the one the model gives this very prompt.
				prompt := sim.Prompt{Messages: msgs[:len(msgs)-1]}
				if tt.ids {
					ids, err := tmpl.PromptIDs(prompt.Messages, nil)
					if err != nil {
						t.Fatal(err)
					}
					prompt = sim.Prompt{IDs: ids}
				}
				want := model.Answer(prompt, sim.Options{MaxTokens: 4096}).Content
				if got := msgs[len(msgs)-1].Content; got != want {
					t.Fatalf("record %s: stored answer does not match its prompt:\n got %.80q\nwant %.80q", l.ID, got, want)
				}
			}
			stdout.Reset()
			runMain(env, []string{"status", "--allow-outside", "--json", "../../specs/examples/" + tt.spec})
			var st struct{ Instances []instanceStatus }
			if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			for _, in := range st.Instances {
				if in.Instance != "generate[prompts]" {
					continue
				}
				// Every record ends done, skipped or failed with a reason;
				// the injected faults are all retryable, so none fails.
				if in.Done+in.Skipped+in.Failed != 140 || in.Failed != 0 {
					t.Errorf("generate: %d done, %d skipped, %d failed (%v); want all 140 accounted for, none failed", in.Done, in.Skipped, in.Failed, in.Reasons)
				}
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
