package merge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/dataset"
	"github.com/eaglet-dev/eaglet/specs"
)

func TestMerge_WeightsAndShuffle(t *testing.T) {
	spec := &specs.Spec{Datasets: []*specs.Dataset{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}}}
	m := &Merge{opts: &Options{ShuffleSeed: 7, Weights: map[string]float64{"a": 0.5, "b": 2}}, spec: spec}
	counts := map[string]int{}
	for i := range 2000 {
		for _, ds := range []string{"a", "b"} {
			counts[ds] += m.copies(&conv.Record{Key: fmt.Sprintf("%s-%d", ds, i), Dataset: ds})
		}
	}
	if counts["b"] != 4000 {
		t.Errorf("weight 2 gave %d copies of 2000 records; want 4000", counts["b"])
	}
	if counts["a"] < 900 || counts["a"] > 1100 {
		t.Errorf("weight 0.5 kept %d of 2000 records; want about 1000", counts["a"])
	}
	rec := &conv.Record{Key: "k"}
	same := &Merge{opts: &Options{ShuffleSeed: 7}, spec: spec}
	other := &Merge{opts: &Options{ShuffleSeed: 8}, spec: spec}
	if m.Order(rec) != same.Order(rec) || m.Order(rec) == other.Order(rec) {
		t.Error("the shuffle must be the same for a seed and differ between seeds")
	}
	if m.Order(rec) >= 1<<63 {
		t.Error("order must fit a signed 64-bit integer")
	}
}

func TestSpecForge_RoundTrip(t *testing.T) {
	rec := &conv.Record{Key: "k1", Messages: []conv.Message{
		{Role: conv.System, Content: "sys"},
		{Role: conv.User, Content: "weather?"},
		{Role: conv.Assistant, Content: "old"},
	}, Tools: []conv.ToolDef{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Generation: &conv.Generation{Content: "", Reasoning: "need the tool",
			ToolCalls: []conv.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}}}}
	b, err := json.Marshal(conv.NewSpecForgeRow(rec.Key, rec.Conversation(), rec.Tools))
	if err != nil {
		t.Fatal(err)
	}
	got := readBack(t, b)
	want := rec.Conversation()
	gb, _ := json.Marshal(got.Messages)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) || len(got.Tools) != 1 || got.Tools[0].Name != "get_weather" {
		t.Errorf("round trip through specforge format:\n got %s\nwant %s", gb, wb)
	}
}

func TestMerge_WeightPrecedence(t *testing.T) {
	spec := &specs.Spec{Datasets: []*specs.Dataset{{Name: "a", Weight: 3}, {Name: "b", Weight: 2}}}
	m := &Merge{opts: &Options{Weights: map[string]float64{"a": 0.5}}, spec: spec}
	tests := []struct {
		dataset string
		want    float64
	}{
		{"a", 0.5}, // merge's weights win over the dataset's weight
		{"b", 2},   // unlisted: the dataset's own weight
		{"gone", 1},
	}
	for _, tt := range tests {
		if got := m.weight(tt.dataset); got != tt.want {
			t.Errorf("weight(%s) = %g; want %g", tt.dataset, got, tt.want)
		}
	}
}

// records is a stages.Input over a slice.
type records []*conv.Record

func (r records) Count() int { return len(r) }

func (r records) Each(_ context.Context, fn func(*conv.Record) error) error {
	for _, rec := range r {
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

func TestMerge_FinishWritesReadableFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sub", "train.jsonl")
	m := &Merge{opts: &Options{}, spec: &specs.Spec{}, out: out}
	in := records{
		{Key: "k1", Dataset: "a", Messages: []conv.Message{{Role: conv.User, Content: "hi"}, {Role: conv.Assistant, Content: "yo"}}},
		{Key: "k2", Dataset: "b", Messages: []conv.Message{{Role: conv.User, Content: "q"}, {Role: conv.Assistant, Content: "a"}}},
	}
	if err := m.Finish(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o644 {
		t.Errorf("output mode %v; want -rw-r--r--", mode)
	}
	b, _ := os.ReadFile(out)
	if n := bytes.Count(b, []byte("\n")); n != 2 {
		t.Errorf("wrote %d lines; want 2:\n%s", n, b)
	}
	if left, _ := filepath.Glob(out + ".*.tmp"); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// TestMessages_OpenAIFieldNames: the messages format speaks OpenAI's field
// names, so stock chat templates render it, keeps the source row's id, and
// reads back into the same conversation.
func TestMessages_OpenAIFieldNames(t *testing.T) {
	rec := &conv.Record{Key: "k1", Dataset: "d", Source: conv.Source{ID: "row-7"}, Messages: []conv.Message{
		{Role: conv.User, Content: "weather?"},
	}, Tools: []conv.ToolDef{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Generation: &conv.Generation{Content: "", Reasoning: "need the tool",
			ToolCalls: []conv.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}}}}
	b, err := json.Marshal(toLine(rec))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"k1","dataset":"d","source_id":"row-7","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":"","reasoning_content":"need the tool","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	if string(b) != want {
		t.Errorf("messages line:\n got %s\nwant %s", b, want)
	}
	got := readBack(t, b)
	gb, _ := json.Marshal(got.Messages)
	wb, _ := json.Marshal(rec.Conversation())
	if string(gb) != string(wb) || got.Source.ID != "k1" {
		t.Errorf("round trip:\n got %s (id %q)\nwant %s (id k1)", gb, got.Source.ID, wb)
	}
}

// readBack loads one output line with eaglet's own loader, as a user who
// feeds merge's output to another spec does.
func readBack(t *testing.T, line []byte) *conv.Record {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(path, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := dataset.Open(path, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Next()
	if err != nil {
		t.Fatalf("eaglet's own loader cannot read the output: %v\n%s", err, line)
	}
	return got
}
