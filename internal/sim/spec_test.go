package sim

import (
	"flag"
	"reflect"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

func TestModel_Speculate_CountsAsServers(t *testing.T) {
	m := New(Config{Seed: 4, MeanTokens: 300, Reasoning: 0.3, ToolCallRate: 0.5})
	d := Drafter{Quality: 0.8, Tokens: 4, Cost: 0.05}
	for i := range 200 {
		p := prompt(i)
		p.Tools = []conv.ToolDef{{Name: "search"}}
		for _, maxTokens := range []int{1, 2, 7, 0} {
			a := m.Answer(p, Options{MaxTokens: maxTokens})
			s := m.Speculate(d, p, a, 0)
			n := a.CompletionTokens()
			if s.Verify+s.Accepted < n-1 || s.Verify+s.Accepted > n {
				t.Fatalf("prompt %d max %d: %d tokens from %d steps and %d accepted", i, maxTokens, n, s.Verify, s.Accepted)
			}
			if s.Drafted != s.Verify*4 || len(s.PerPosition) != 4 {
				t.Fatalf("prompt %d: drafted %d in %d steps, %d positions", i, s.Drafted, s.Verify, len(s.PerPosition))
			}
			steps, accepted, perPos := 0, 0, 0
			for k, c := range s.Histogram {
				steps += c
				accepted += k * c
			}
			for j, c := range s.PerPosition {
				perPos += c
				if j > 0 && c > s.PerPosition[j-1] {
					t.Fatalf("prompt %d: position %d accepted more than the one before: %v", i, j, s.PerPosition)
				}
			}
			if steps != s.Verify || accepted != s.Accepted || perPos != s.Accepted {
				t.Fatalf("prompt %d: histogram %v, per position %v, for %d steps and %d accepted", i, s.Histogram, s.PerPosition, s.Verify, s.Accepted)
			}
			if want := float64(n) / (1 + float64(s.Verify)*1.2); s.Pace != want || n == 1 && s.Verify != 0 {
				t.Fatalf("prompt %d: %d tokens at pace %g in %d steps", i, n, s.Pace, s.Verify)
			}
			if again := m.Speculate(d, p, a, 0); !reflect.DeepEqual(again, s) {
				t.Fatalf("prompt %d: two speculations differ", i)
			}
		}
	}
}

func TestModel_Speculate_Baseline(t *testing.T) {
	m := New(Config{Seed: 1})
	a := m.Answer(prompt(1), Options{})
	if got := m.Speculate(Drafter{Tokens: 5}, prompt(1), a, 0); !reflect.DeepEqual(got, Speculation{Pace: 1}) {
		t.Errorf("no drafter: %+v", got)
	}
}

// acceptLength is SGLang's figure over many prompts: completion tokens
// over verify steps.
func acceptLength(m *Model, d Drafter, temperature float64, p func(int) Prompt) float64 {
	tokens, steps := 0, 0
	for i := range 300 {
		a := m.Answer(p(i), Options{})
		s := m.Speculate(d, p(i), a, temperature)
		tokens += a.CompletionTokens()
		steps += s.Verify
	}
	return float64(tokens) / float64(steps)
}

func TestModel_Speculate_WhatLowersAcceptance(t *testing.T) {
	m := New(Config{Seed: 2, MeanTokens: 200})
	good, poor := Drafter{Quality: 0.9}, Drafter{Quality: 0.5}
	short := acceptLength(m, good, 0, prompt)
	long := acceptLength(m, good, 0, func(i int) Prompt {
		p := prompt(i)
		p.Messages[0].Content += strings.Repeat(" more context", 10000)
		return p
	})
	cases := []struct {
		name       string
		got, below float64
	}{
		{"a poorer drafter", acceptLength(m, poor, 0, prompt), short},
		{"sampling at temperature 1", acceptLength(m, good, 1, prompt), short},
		{"a 20k-token context", long, short},
	}
	for _, c := range cases {
		if c.got >= c.below {
			t.Errorf("%s: acceptance length %.3f, want below %.3f", c.name, c.got, c.below)
		}
	}
	if short < 2 || short > 4 {
		t.Errorf("a good drafter's acceptance length %.3f with 3 draft tokens, want 2 to 4", short)
	}
}

func TestDrafter_Check(t *testing.T) {
	for _, c := range []struct {
		d    Drafter
		want string
	}{
		{Drafter{}, ""},
		{Drafter{Quality: 0.7, Tokens: 5, Cost: 0.1}, ""},
		{Drafter{Quality: 1.5}, "draft quality 1.5"},
		{Drafter{Quality: 0.5, Tokens: -1}, "speculative tokens -1"},
		{Drafter{Quality: 0.5, Cost: -0.1}, "draft cost -0.1"},
	} {
		err := c.d.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: error %v, want %q", c.d, err, c.want)
		}
	}
}

// TestDrafter_OneDeclaration checks that sim-server's drafter flags take
// the Go defaults and that every setting has a flag and a doc.
func TestDrafter_OneDeclaration(t *testing.T) {
	var flagged Drafter
	fs := flag.NewFlagSet("sim-server", flag.ContinueOnError)
	flagged.Flags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if got, want := flagged, (Drafter{}).WithDefaults(); got != want || got.On() {
		t.Errorf("flag defaults %+v, want %+v and no drafter", got, want)
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Drafter]()) {
		if fs.Lookup(f.Tag.Get("flag")) == nil || f.Tag.Get("doc") == "" || f.Tag.Get("yaml") == "" {
			t.Errorf("Drafter.%s lacks a flag, doc or yaml tag", f.Name)
		}
	}
	if err := fs.Parse([]string{"-draft-quality", "0.7", "-num-speculative-tokens", "5", "-draft-cost", "0.05"}); err != nil {
		t.Fatal(err)
	}
	if want := (Drafter{Quality: 0.7, Tokens: 5, Cost: 0.05}); flagged != want {
		t.Errorf("flags set %+v, want %+v", flagged, want)
	}
}
