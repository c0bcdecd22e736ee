package sim

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

func prompt(i int) Prompt {
	return Prompt{Messages: []conv.Message{{Role: conv.User, Content: fmt.Sprintf("question number %d", i)}}}
}

func TestModel_Answer_Deterministic(t *testing.T) {
	a := New(Config{Seed: 7, Reasoning: 0.3}).Answer(prompt(1), Options{MaxTokens: 4000})
	b := New(Config{Seed: 7, Reasoning: 0.3}).Answer(prompt(1), Options{MaxTokens: 4000})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same prompt, seed and max tokens gave different answers")
	}
	c := New(Config{Seed: 8, Reasoning: 0.3}).Answer(prompt(1), Options{MaxTokens: 4000})
	if c.Content == a.Content {
		t.Fatal("another seed gave the same answer")
	}
}

func TestModel_Answer_Shape(t *testing.T) {
	m := New(Config{Seed: 1, MeanTokens: 200, Reasoning: 0.4})
	for i := range 300 {
		for _, max := range []int{5, 50, 400, 0} {
			a := m.Answer(prompt(i), Options{MaxTokens: max})
			n := a.CompletionTokens()
			if max > 0 && n > max {
				t.Fatalf("prompt %d: %d tokens over max %d", i, n, max)
			}
			switch a.FinishReason {
			case "length":
				if n != max {
					t.Fatalf("prompt %d: cut at %d, max %d", i, n, max)
				}
			case "stop":
				if a.Tokens[n-1].ID != EOS {
					t.Fatalf("prompt %d: stopped without EOS", i)
				}
				if !strings.HasSuffix(a.Content, ".") || a.Reasoning != "" && !strings.Contains(textOf(a), "</think>") {
					t.Fatalf("prompt %d: stopped answer %q", i, textOf(a))
				}
			default:
				t.Fatalf("finish reason %q", a.FinishReason)
			}
			if got := Count(a.Reasoning) + Count(a.Content) + 3; a.Reasoning != "" && a.FinishReason == "stop" && got != n {
				t.Fatalf("prompt %d: recount %d, completion tokens %d", i, got, n)
			}
			ids := a.OutputIDs()
			if !reflect.DeepEqual(Tokenize(a.Content), ids[len(ids)-Count(a.Content):]) {
				t.Fatalf("prompt %d: output ids do not match the content's sim tokens", i)
			}
		}
	}
}

func textOf(a *Answer) string {
	var b strings.Builder
	for _, t := range a.Tokens {
		b.WriteString(t.Text)
	}
	return b.String()
}

func TestModel_Answer_CutIsPrefix(t *testing.T) {
	m := New(Config{Seed: 3, MeanTokens: 500})
	full := m.Answer(prompt(9), Options{})
	cut := m.Answer(prompt(9), Options{MaxTokens: full.CompletionTokens() / 2})
	if !strings.HasPrefix(full.Content, cut.Content) || cut.FinishReason != "length" {
		t.Fatalf("cut answer %q is not a prefix of %q", cut.Content, full.Content)
	}
}

func TestModel_NaturalLength_LongTailed(t *testing.T) {
	m := New(Config{Seed: 5, MeanTokens: 2000})
	const n = 20000
	sum, over := 0.0, 0
	for i := range n {
		l := m.NaturalLength(prompt(i))
		sum += float64(l)
		if l > 4*2000 {
			over++
		}
	}
	if mean := sum / n; math.Abs(mean-2000)/2000 > 0.05 {
		t.Errorf("mean length %.0f, want about 2000", mean)
	}
	if over == 0 {
		t.Error("no lengths beyond 4x the mean: the tail is missing")
	}
}

func TestModel_Answer_ToolCall(t *testing.T) {
	m := New(Config{Seed: 2, ToolCallRate: 1})
	p := prompt(4)
	p.Tools = []conv.ToolDef{{Name: "search"}}
	a := m.Answer(p, Options{MaxTokens: 1000})
	if a.FinishReason != "tool_calls" || len(a.ToolCalls) != 1 || a.ToolCalls[0].Name != "search" {
		t.Fatalf("answer %+v", a)
	}
	if !json.Valid(a.ToolCalls[0].Arguments) {
		t.Fatalf("arguments %s", a.ToolCalls[0].Arguments)
	}
}

func TestPieces_RoundTrip(t *testing.T) {
	for _, s := range []string{"Hello, world.", "\n\tfor _, x := range items {", "héllo wörld", "  trailing  "} {
		if got := strings.Join(Pieces(s), ""); got != s {
			t.Errorf("Pieces(%q) joined = %q", s, got)
		}
		if Count(s) != len(Pieces(s)) || len(Tokenize(s)) != Count(s) {
			t.Errorf("%q: counts disagree", s)
		}
	}
	if got := Pieces("Hello, world."); !reflect.DeepEqual(got, []string{"Hello", ",", " world", "."}) {
		t.Errorf("Pieces = %q", got)
	}
}

func ExampleModel_Answer() {
	m := New(Config{Seed: 1, MeanTokens: 40, Reasoning: 0.3})
	a := m.Answer(Prompt{Text: "Why is the sky blue?"}, Options{MaxTokens: 60})
	fmt.Printf("%s | %d tokens\n", a.FinishReason, a.CompletionTokens())
	fmt.Printf("reasoning: %s\n", a.Reasoning)
	fmt.Printf("content: %s\n", a.Content)
	// Output:
	// length | 60 tokens
	// reasoning: Check output file instead which step market keeps while instead. Small, user case range value proof already.
	//
	// Market energy query new
	// content: This theory line shows returns different into clearly changes or rate. Data makes data on holds carefully rate theory size. Method cache into should step same node output should not on.
}

// TestConfig_OneDeclaration checks that sim-server's flags and a Go
// caller's zero Config give the same model, and that every setting is
// documented: the in-process and HTTP simulators must not disagree.
func TestConfig_OneDeclaration(t *testing.T) {
	var flagged Config
	fs := flag.NewFlagSet("sim-server", flag.ContinueOnError)
	flagged.Flags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if got, want := New(flagged).Config(), New(Config{}).Config(); got != want {
		t.Errorf("sim-server's defaults give %+v, a zero Config %+v", got, want)
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Config]()) {
		if f.Tag.Get("flag") == "" || f.Tag.Get("doc") == "" {
			t.Errorf("Config.%s has no flag or doc tag", f.Name)
		}
		if fs.Lookup(f.Tag.Get("flag")) == nil {
			t.Errorf("Config.%s: no flag -%s bound", f.Name, f.Tag.Get("flag"))
		}
	}
	if err := fs.Parse([]string{"-mean-tokens", "80", "-tool-call-rate", "0.5", "-seed", "7"}); err != nil {
		t.Fatal(err)
	}
	if flagged.MeanTokens != 80 || flagged.ToolCallRate != 0.5 || flagged.Seed != 7 {
		t.Errorf("flags set %+v", flagged)
	}
}
