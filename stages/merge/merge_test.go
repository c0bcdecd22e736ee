package merge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/conv"
	"github.com/eaglet-dev/eaglet/stages/load/dataset"
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
	other := &Merge{opts: &Options{ShuffleSeed: 8}, spec: spec}
	if m.Order(rec) != m.Order(rec) || m.Order(rec) == other.Order(rec) {
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
	b, err := json.Marshal(toSpecForge(rec))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sf.jsonl")
	os.WriteFile(path, append(b, '\n'), 0o644)
	r, err := dataset.Open(path, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Next()
	if err != nil {
		t.Fatalf("eaglet's own loader cannot read the SpecForge output: %v\n%s", err, b)
	}
	want := rec.Conversation()
	gb, _ := json.Marshal(got.Messages)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) || len(got.Tools) != 1 || got.Tools[0].Name != "get_weather" {
		t.Errorf("round trip through specforge format:\n got %s\nwant %s", gb, wb)
	}
}
