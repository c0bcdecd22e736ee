package handoff_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/stages"
)

var allFormats = []string{"speculators", "specforge", "specforge-text", "messages"}

// formatsRun answers the test conversations turn by turn with reasoning
// and tool calls, and hands them off in every format.
func formatsRun(t *testing.T) string {
	t.Helper()
	tokDir, _ := qwen3(t)
	url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 11, MeanTokens: 40, Reasoning: 0.3, ToolCallRate: 0.5}), Name: "target"})
	dir := workdir(t)
	var stages strings.Builder
	for _, f := range allFormats {
		fmt.Fprintf(&stages, "  - {name: %s, uses: handoff, needs: [generate], with: {out: %s, format: %s, tokenizer: %q}}\n",
			strings.ReplaceAll(f, "-", "_"), f, f, tokDir)
	}
	spec := fmt.Sprintf(`version: 1
name: formats
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
endpoints: {chat: {api: openai, urls: [%q], model: target}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 300, temperature: 0.7, turns: all}}
%s`, url+"/v1", stages.String())
	enginetest.OpenAndRun(t, dir, spec)
	return dir
}

// TestHandoff_Formats checks each format's rows against its golden file
// and against the rules of the consumer that reads it, over one run.
func TestHandoff_Formats(t *testing.T) {
	dir := formatsRun(t)
	t.Run("golden", func(t *testing.T) { golden(t, dir) })
	t.Run("consumers accept", func(t *testing.T) { consumersAccept(t, dir) })
}

func golden(t *testing.T, dir string) {
	for _, f := range allFormats {
		got := bytes.Join(readRows(t, filepath.Join(dir, f, "current")), []byte("\n"))
		golden := filepath.Join("testdata", "golden", f+".jsonl")
		if *update {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bytes.TrimSpace(want), got) {
			t.Errorf("format %s changed; diff %s against the version under %s, and if intended run go test -update", f, golden, dir)
		}
	}
}

// consumersAccept applies the rules the consumers' own code applies to
// what it reads: SpecForge's validate_regenerated_data.py and its training
// loader's columns, speculators' prepare_data.py passthrough of
// pre-tokenized rows, and SpecForge's --is-preformatted text column.
func consumersAccept(t *testing.T, dir string) {
	t.Run("specforge validator", func(t *testing.T) {
		rows := readRows(t, filepath.Join(dir, "specforge", "current"))
		if len(rows) == 0 {
			t.Fatal("no rows")
		}
		seen := map[string]bool{}
		for i, line := range rows {
			if err := specForgeValidate(line); err != nil {
				t.Errorf("line %d: validate_regenerated_data.py would stop: %v\n%s", i+1, err, line)
			}
			var r struct{ ID string }
			json.Unmarshal(line, &r)
			seen[r.ID] = true
		}
		if len(seen) != len(rows) {
			t.Errorf("%d ids for %d rows", len(seen), len(rows))
		}
	})
	t.Run("speculators passthrough", func(t *testing.T) {
		for i, line := range readRows(t, filepath.Join(dir, "speculators", "current")) {
			var cols map[string]json.RawMessage
			if err := json.Unmarshal(line, &cols); err != nil {
				t.Fatal(err)
			}
			if cols["input_ids"] == nil || cols["loss_mask"] == nil || cols["conversations"] != nil {
				t.Fatalf("line %d: speculators passes rows through only with input_ids and loss_mask columns: %s", i+1, line)
			}
			var r speculatorsRow
			json.Unmarshal(line, &r)
			sum := 0
			for _, m := range r.LossMask {
				if m != 0 && m != 1 {
					t.Fatalf("line %d: loss_mask holds %d", i+1, m)
				}
				sum += m
			}
			switch {
			case len(r.InputIDs) != len(r.LossMask):
				t.Errorf("line %d: shape mismatch input_ids=%d loss_mask=%d (prepare_data.py raises)", i+1, len(r.InputIDs), len(r.LossMask))
			case sum == 0:
				t.Errorf("line %d: no supervised tokens (prepare_data.py drops it)", i+1)
			case r.ID == "" || r.PrimaryID == "":
				t.Errorf("line %d: id and primary_id must be set (regeneration's --resume keys on primary_id)", i+1)
			}
		}
	})
	t.Run("specforge text", func(t *testing.T) {
		for i, line := range readRows(t, filepath.Join(dir, "specforge-text", "current")) {
			var r struct{ Text string }
			if err := json.Unmarshal(line, &r); err != nil || !strings.HasSuffix(r.Text, "<|im_end|>") || !strings.Contains(r.Text, "<|im_start|>assistant\n") {
				t.Errorf("line %d: text is not a rendered conversation ending in an assistant turn: %.200s", i+1, line)
			}
		}
	})
}

// specForgeValidate restates validate_regenerated_data.py and
// conversation_validation.py (sgl-project/SpecForge) rule by rule.
func specForgeValidate(line []byte) error {
	var row struct {
		ID            any              `json:"id"`
		Status        any              `json:"status"`
		Conversations []map[string]any `json:"conversations"`
	}
	if err := json.Unmarshal(line, &row); err != nil {
		return err
	}
	if id, ok := row.ID.(string); !ok || strings.TrimSpace(id) == "" {
		return fmt.Errorf("id must be a non-empty string")
	}
	if row.Status != "success" {
		return fmt.Errorf("status must be 'success'")
	}
	if len(row.Conversations) == 0 {
		return fmt.Errorf("conversations must be a non-empty list")
	}
	expected, sawUser, assistants := "user", false, 0
	for i, m := range row.Conversations {
		content, ok := m["content"].(string)
		if !ok || strings.TrimSpace(content) == "" {
			return fmt.Errorf("message %d content must be a non-empty string", i)
		}
		role := m["role"]
		if role == "system" && !sawUser {
			continue
		}
		if role != "user" && role != "assistant" {
			return fmt.Errorf("message %d has unsupported role %v", i, role)
		}
		if role != expected {
			return fmt.Errorf("message %d expected role %s, got %v", i, expected, role)
		}
		sawUser = true
		if role == "user" {
			expected = "assistant"
		} else {
			expected = "user"
			assistants++
			if r, ok := m["reasoning_content"]; ok && r != nil {
				if _, ok := r.(string); !ok {
					return fmt.Errorf("assistant message %d reasoning_content must be a string or null", i)
				}
			}
		}
	}
	if !sawUser {
		return fmt.Errorf("conversation has no user message")
	}
	if assistants == 0 {
		return fmt.Errorf("conversation has no assistant message")
	}
	if row.Conversations[len(row.Conversations)-1]["role"] != "assistant" {
		return fmt.Errorf("conversation must end with an assistant message")
	}
	return nil
}

// TestHandoff_SpecForgeDropsCountedPerRecord: a turn whose context holds
// tool calls alone cannot be a SpecForge row (its validator stops at empty
// content). The handoff's record counts must agree with the rows: a
// record is done exactly when it gives a row, so one whose only turn
// breaks the validator's rules is dropped with that reason, as the
// manifest counts it. Before, the run kept such records and only the
// writing of the shards dropped them, so status showed more done than
// records written. The manifest's ids_from and prompt_check count rows
// written, not turns dropped (max_length drops turns after tokenizing).
func TestHandoff_SpecForgeDropsCountedPerRecord(t *testing.T) {
	tokDir, _ := qwen3(t)
	url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 3, MeanTokens: 40}), Name: "target"})
	for _, turns := range []string{"last", "all"} {
		t.Run(turns, func(t *testing.T) {
			dir := workdir(t)
			spec := fmt.Sprintf(`version: 1
name: specforge-drops
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
endpoints: {chat: {api: openai, urls: [%q], model: target}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 200, turns: %s}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out, format: specforge, tokenizer: %q, max_length: 60}}
`, url+"/v1", turns, tokDir)
			_, store, _ := enginetest.OpenAndRun(t, dir, spec)
			done := enginetest.Count(t, store, "handoff", stages.Done)
			withRows := map[string]bool{}
			for _, line := range readRows(t, filepath.Join(dir, "out", "current")) {
				var r struct{ Metadata struct{ Key string } }
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatal(err)
				}
				withRows[r.Metadata.Key] = true
			}
			if len(withRows) != done {
				t.Errorf("%d records done, %d records with rows; want a record done exactly when it gives a row", done, len(withRows))
			}
			m := manifest(t, dir, current(t, dir))
			for _, field := range []string{"ids_from", "prompt_check"} {
				n := 0
				for _, v := range m[field].(map[string]any) {
					n += int(v.(float64))
				}
				if rows := int(m["rows"].(float64)); n != rows {
					t.Errorf("the manifest's %s counts %d rows of %d written; want every row and no dropped turn", field, n, rows)
				}
			}
			if turns != "last" {
				return
			}
			inst, err := store.GetInstance("handoff")
			if err != nil {
				t.Fatal(err)
			}
			ds := m["datasets"].(map[string]any)["d"].(map[string]any)
			inManifest := ds["dropped"].(map[string]any)
			validator := 0
			for reason, n := range inst.Stats.Dropped {
				if int(inManifest[reason].(float64)) != n {
					t.Errorf("%d records dropped for %q, the manifest %v; want the same (one turn a record)", n, reason, inManifest[reason])
				}
				if strings.HasPrefix(reason, "specforge validator: ") {
					validator += n
				}
			}
			if validator == 0 {
				t.Errorf("no record dropped by the SpecForge validator's rules (drops %v); a record's context holds a tool call alone", inst.Stats.Dropped)
			}
		})
	}
}
