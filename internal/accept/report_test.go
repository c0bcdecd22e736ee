package accept

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
)

// simRows measures prompts of three datasets with drafter d (none for the
// baseline) as the sim-server would report them: chat questions over one
// and two turns, tool calls, and long documents, each row's latency its
// answer's decode time at 100 tokens/s.
func simRows(d sim.Drafter, drafter string) []Row {
	m := sim.New(sim.Config{Seed: 11, MeanTokens: 120, Reasoning: 0.2, ToolCallRate: 1})
	var rows []Row
	add := func(dataset, key string, turn int, p sim.Prompt) {
		a := m.Answer(p, sim.Options{})
		sp := m.Speculate(d, p, a, 0)
		segment := Whole
		if a.FinishReason == "tool_calls" {
			segment = ToolCall
		}
		rows = append(rows, Row{Drafter: drafter, Target: "sim", Sampling: "temperature=0", Prompt: key, Dataset: dataset,
			Turn: turn, ContextTokens: a.PromptTokens, Segment: segment, Requests: 1,
			Measurement: Measurement{CompletionTokens: a.CompletionTokens(), Verify: sp.Verify, Accepted: sp.Accepted,
				Drafted: sp.Drafted, Counted: d.On(), PerPosition: sp.PerPosition},
			Latency: time.Duration(float64(a.CompletionTokens()) / sp.Pace / 100 * float64(time.Second))})
	}
	for i := range 40 {
		q := []conv.Message{{Role: conv.User, Content: fmt.Sprintf("question %d", i)}}
		add("chat", fmt.Sprintf("chat-%d", i), 1, sim.Prompt{Messages: q})
		q = append(q, conv.Message{Role: conv.Assistant, Content: "an answer"}, conv.Message{Role: conv.User, Content: "and then?"})
		add("chat", fmt.Sprintf("chat-%d", i), 2, sim.Prompt{Messages: q})
		add("tools", fmt.Sprintf("tools-%d", i), 1, sim.Prompt{Messages: q[:1], Tools: []conv.ToolDef{{Name: "search"}}})
		doc := strings.Repeat(fmt.Sprintf("page %d of a long report. ", i), 1500)
		add("documents", fmt.Sprintf("doc-%d", i), 1, sim.Prompt{Messages: []conv.Message{{Role: conv.User, Content: doc}}})
	}
	return rows
}

// TestBreak_AddsUpToTheTotal: every dimension's lines sum to the total,
// each line's ratios are its own sums', and the lines come in order.
func TestBreak_AddsUpToTheTotal(t *testing.T) {
	rows := simRows(sim.Drafter{Quality: 0.8}, "drafter-a")
	total := Sum(rows)
	for _, c := range []struct {
		d      Dimension
		labels []string
	}{
		{ByDataset, []string{"chat", "documents", "tools"}},
		{ByTurn, []string{"1", "2"}},
		{ByContext(Buckets{1000, 2000, 4000, 8000, 16000, 32000}), []string{"0-1k", "8k-16k"}},
		{BySegment, []string{"whole answer", "tool_call"}},
		{ByDrafter, []string{"drafter-a"}},
	} {
		b := Break(rows, c.d)
		var sum Figures
		var labels []string
		for _, l := range b.Lines {
			sum = sum.plus(l.Figures)
			labels = append(labels, l.Label)
			if l.AcceptLength() != float64(l.CompletionTokens)/float64(l.Verify) {
				t.Errorf("%s %s: acceptance length %g of %d tokens in %d steps", b.By, l.Label, l.AcceptLength(), l.CompletionTokens, l.Verify)
			}
		}
		if sum != total || b.Total != total {
			t.Errorf("%s: lines sum to %+v, total %+v, all rows %+v", b.By, sum, b.Total, total)
		}
		if !reflect.DeepEqual(labels, c.labels) {
			t.Errorf("%s: lines %q, want %q", b.By, labels, c.labels)
		}
	}
	byDataset := map[string]float64{}
	for _, l := range Break(rows, ByDataset).Lines {
		byDataset[l.Label] = l.AcceptLength()
	}
	if !(byDataset["documents"] < byDataset["chat"] && byDataset["chat"] < byDataset["tools"]) {
		t.Errorf("acceptance by dataset %v: want long documents lowest and tool calls highest", byDataset)
	}
}

func TestFigures_Ratios(t *testing.T) {
	for _, c := range []struct {
		name                 string
		rows                 []Row
		length, rate, perSec float64
	}{
		{"none", nil, 0, 0, 0},
		{"the baseline", []Row{{Requests: 1, Measurement: Measurement{CompletionTokens: 50}, Latency: time.Second}}, 0, 0, 50},
		{"one request", []Row{{Requests: 1, Measurement: Measurement{CompletionTokens: 40, Verify: 10, Accepted: 24, Drafted: 30, Counted: true},
			Latency: 2 * time.Second}}, 4, 0.8, 20},
		{"a release that counts no drafts beside one that does", []Row{
			{Requests: 1, Measurement: Measurement{CompletionTokens: 40, Verify: 10, Accepted: 24, Drafted: 30, Counted: true}, Latency: time.Second},
			{Requests: 1, Measurement: Measurement{CompletionTokens: 20, Verify: 10}, Latency: time.Second}}, 3, 0.8, 30},
	} {
		f := Sum(c.rows)
		if f.AcceptLength() != c.length || f.AcceptRate() != c.rate || f.Throughput() != c.perSec {
			t.Errorf("%s: length %g, rate %g, throughput %g; want %g, %g, %g", c.name,
				f.AcceptLength(), f.AcceptRate(), f.Throughput(), c.length, c.rate, c.perSec)
		}
	}
}

func TestBuckets(t *testing.T) {
	b := Buckets{1000, 2000, 4096}
	for _, c := range []struct {
		tokens int
		label  string
	}{{0, "0-1k"}, {999, "0-1k"}, {1000, "1k-2k"}, {1999, "1k-2k"}, {2000, "2k-4096"}, {4095, "2k-4096"}, {4096, "4096+"}, {100000, "4096+"}} {
		if got := b.Label(b.Index(c.tokens)); got != c.label {
			t.Errorf("%d tokens: bucket %q, want %q", c.tokens, got, c.label)
		}
	}
	if got := (Buckets{}).Label(0); got != "all" {
		t.Errorf("no bounds: %q", got)
	}
}

func TestByTurn_UnknownLast(t *testing.T) {
	rows := []Row{{Turn: 0}, {Turn: 10}, {Turn: 2}}
	var labels []string
	for _, p := range Partition(rows, ByTurn) {
		labels = append(labels, p.Label)
	}
	if want := []string{"2", "10", "unknown"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("turns %q, want %q", labels, want)
	}
}

func ExampleBreak() {
	rows := []Row{
		{Dataset: "mt-bench", Turn: 1, Requests: 1, Measurement: Measurement{CompletionTokens: 300, Verify: 100}, Latency: 3 * time.Second},
		{Dataset: "mt-bench", Turn: 2, Requests: 1, Measurement: Measurement{CompletionTokens: 200, Verify: 80}, Latency: 2 * time.Second},
		{Dataset: "humaneval", Turn: 1, Requests: 1, Measurement: Measurement{CompletionTokens: 400, Verify: 100}, Latency: 2 * time.Second},
	}
	for _, d := range []Dimension{ByDataset, ByTurn} {
		b := Break(rows, d)
		for _, l := range b.Lines {
			fmt.Printf("%s %-9s acceptance length %.2f, %3.0f tokens/s\n", b.By, l.Label, l.AcceptLength(), l.Throughput())
		}
		fmt.Printf("%s %-9s acceptance length %.2f, %3.0f tokens/s\n", b.By, "all", b.Total.AcceptLength(), b.Total.Throughput())
	}
	// Output:
	// dataset humaneval acceptance length 4.00, 200 tokens/s
	// dataset mt-bench  acceptance length 2.78, 100 tokens/s
	// dataset all       acceptance length 3.21, 129 tokens/s
	// turn 1         acceptance length 3.50, 140 tokens/s
	// turn 2         acceptance length 2.50, 100 tokens/s
	// turn all       acceptance length 3.21, 129 tokens/s
}
