package handoff_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
)

// servingManifest is what the test reads of a manifest.
type servingManifest struct {
	Rows    int `json:"rows"`
	Serving []struct {
		conv.Served
		Rows int `json:"rows"`
	} `json:"serving"`
	Warnings []string `json:"warnings"`
}

// TestHandoff_RecordsTheServingStack: the manifest counts rows by the
// serving stack that answered them, as each server described itself
// (SGLang's /get_server_info, OpenRouter's provider in each response). An
// endpoint pointed at another stack between runs keeps the answers it
// has (the URL is not what decides them), so the next handoff mixes two
// stacks, and it says so in the manifest, the data card and status.
func TestHandoff_RecordsTheServingStack(t *testing.T) {
	fp8 := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 3, MeanTokens: 40}), Name: "target",
		Stack: server.Stack{ModelPath: "/models/target-fp8", Quantization: "fp8"}})
	bf16 := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 3, MeanTokens: 40}), Name: "target",
		Stack: server.Stack{ModelPath: "/models/target", Provider: "DeepInfra"}})
	dir := workdir(t)
	spec := func(url, stream string, datasets ...string) string {
		var ds []string
		for _, d := range datasets {
			ds = append(ds, fmt.Sprintf("%s: {source: %s.jsonl, format: messages}", d, d))
		}
		return fmt.Sprintf(`version: 1
name: stacks
state: state.db
datasets: {%s}
endpoints: {e: {api: openai, urls: [%q], model: target, options: {stream: %s}}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 200}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out, format: messages}}
`, strings.Join(ds, ", "), url+"/v1", stream)
	}
	read := func() servingManifest {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "out", "current", "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m servingManifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if err := os.Rename(filepath.Join(dir, "convos.jsonl"), filepath.Join(dir, "a.jsonl")); err != nil {
		t.Fatal(err)
	}
	_, store, _ := enginetest.OpenAndRun(t, dir, spec(fp8, "false", "a"))
	store.Close()
	m := read()
	want := conv.Served{Server: "sglang " + server.SimVersion, Model: "/models/target-fp8", Quantization: "fp8",
		DType: "auto", KVCacheDType: "auto", TPSize: 1, WeightVersion: "default"}
	if len(m.Serving) != 1 || m.Serving[0].Served != want || m.Serving[0].Rows != m.Rows || len(m.Warnings) != 0 {
		t.Fatalf("one stack: serving %+v, warnings %q; want %d rows of %+v and no warning", m.Serving, m.Warnings, m.Rows, want)
	}

	var b strings.Builder
	for i := range 4 {
		fmt.Fprintf(&b, `{"messages": [{"role": "user", "content": "Question %d, asked of the other stack."}]}`+"\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, store, _ = enginetest.OpenAndRun(t, dir, spec(bf16, "true", "a", "b"))
	defer store.Close()
	m = read()
	other := conv.Served{Server: "sglang " + server.SimVersion, Model: "/models/target", DType: "auto", KVCacheDType: "auto",
		TPSize: 1, WeightVersion: "default", Provider: "DeepInfra"}
	rows := map[conv.Served]int{}
	for _, s := range m.Serving {
		rows[s.Served] += s.Rows
	}
	if len(m.Serving) != 2 || rows[other] != 4 || rows[want]+rows[other] != m.Rows {
		t.Fatalf("two stacks: serving %+v; want 4 rows of %+v and the rest of %+v (%d rows)", m.Serving, other, want, m.Rows)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "the answers came from 2 serving stacks") ||
		!strings.Contains(m.Warnings[0], "provider DeepInfra") || !strings.Contains(m.Warnings[0], "quantization fp8") {
		t.Fatalf("warnings %q; want one naming both stacks", m.Warnings)
	}
	card, err := os.ReadFile(filepath.Join(dir, "out", "current", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(card), "- Warning: the answers came from 2 serving stacks") {
		t.Errorf("the data card does not warn:\n%s", card)
	}
	in, err := store.GetInstance("handoff")
	if err != nil || in == nil {
		t.Fatalf("handoff: %v %v", in, err)
	}
	if !strings.Contains(strings.Join(in.Stats.Figures, "\n"), "warning: the answers came from 2 serving stacks") {
		t.Errorf("status figures %q do not warn", in.Stats.Figures)
	}
}
