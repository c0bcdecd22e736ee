package accept

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
)

// TestParseSGLang reads each SGLang release's meta_info as its tokenizer
// manager writes it.
func TestParseSGLang(t *testing.T) {
	for _, c := range []struct {
		name, meta string
		want       Measurement
		ok         bool
	}{
		{"no speculative decoding", `{"id":"a","completion_tokens":40,"prompt_tokens":9}`,
			Measurement{CompletionTokens: 40}, false},
		{"before 0.5: spec_verify_ct alone", `{"completion_tokens":40,"spec_verify_ct":12}`,
			Measurement{CompletionTokens: 40, Verify: 12}, true},
		{"0.5: token nums and histogram",
			`{"completion_tokens":40,"spec_verify_ct":12,"spec_accept_rate":0.75,"spec_accept_length":3.3333333333333335,` +
				`"spec_accept_token_num":27,"spec_draft_token_num":36,"spec_accept_histogram":[1,2,3,6]}`,
			Measurement{CompletionTokens: 40, Verify: 12, Accepted: 27, Drafted: 36, Counted: true, PerPosition: []int{11, 9, 6}}, true},
		{"0.5 without a verify step", `{"completion_tokens":1,"spec_verify_ct":0,"spec_accept_rate":0.0,"spec_accept_length":0}`,
			Measurement{CompletionTokens: 1}, true},
		{"newer: drafts and their aliases",
			`{"completion_tokens":40,"spec_verify_ct":12,"spec_num_correct_drafts":27,"spec_num_proposed_drafts":36,` +
				`"spec_accepted_drafts":27,"spec_proposed_drafts":36,"spec_correct_drafts_histogram":[3,9],"spec_accept_histogram":[3,9]}`,
			Measurement{CompletionTokens: 40, Verify: 12, Accepted: 27, Drafted: 36, Counted: true, PerPosition: []int{9}}, true},
		{"aliases alone", `{"completion_tokens":40,"spec_verify_ct":12,"spec_accepted_drafts":20,"spec_proposed_drafts":24}`,
			Measurement{CompletionTokens: 40, Verify: 12, Accepted: 20, Drafted: 24, Counted: true}, true},
		{"one name of a pair is not a count", `{"completion_tokens":40,"spec_verify_ct":12,"spec_accept_token_num":27}`,
			Measurement{CompletionTokens: 40, Verify: 12}, true},
	} {
		got, ok, err := ParseSGLang([]byte(c.meta))
		if err != nil || ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %t, %v; want %+v, %t", c.name, got, ok, err, c.want, c.ok)
		}
	}
}

func TestParseSGLang_Errors(t *testing.T) {
	for _, c := range []struct{ meta, want string }{
		{`[]`, "sglang meta_info"},
		{`{"completion_tokens":"many"}`, "completion_tokens"},
		{`{"completion_tokens":4,"spec_verify_ct":1.5}`, "spec_verify_ct: 1.5 is not a count"},
		{`{"completion_tokens":4,"spec_verify_ct":-1}`, "spec_verify_ct"},
		{`{"completion_tokens":4,"spec_verify_ct":2,"spec_accept_histogram":"x"}`, "spec_accept_histogram"},
	} {
		if _, _, err := ParseSGLang([]byte(c.meta)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.meta, err, c.want)
		}
	}
}

// TestParseSGLang_SimServer: what the sim-server reports as SGLang, read
// back, is the speculation the sim recomputes.
func TestParseSGLang_SimServer(t *testing.T) {
	m := sim.New(sim.Config{Seed: 8, MeanTokens: 120, Reasoning: 0.3})
	d := sim.Drafter{Quality: 0.75, Tokens: 3}
	url := simtest.Serve(t, server.Config{Model: m, Drafter: d})
	for i := range 15 {
		text := fmt.Sprintf("prompt %d", i)
		var body struct {
			MetaInfo json.RawMessage `json:"meta_info"`
		}
		if err := postJSON(url+"/generate", map[string]any{"text": text, "sampling_params": map[string]any{"max_new_tokens": 400, "temperature": 0}}, &body); err != nil {
			t.Fatal(err)
		}
		got, ok, err := ParseSGLang(body.MetaInfo)
		a := m.Answer(sim.Prompt{Text: text}, sim.Options{MaxTokens: 400})
		sp := m.Speculate(d, sim.Prompt{Text: text}, a, 0)
		want := Measurement{CompletionTokens: a.CompletionTokens(), Verify: sp.Verify, Accepted: sp.Accepted,
			Drafted: sp.Drafted, Counted: sp.Verify > 0, PerPosition: trimmed(sp.PerPosition)}
		if err != nil || !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %+v, %t, %v; want %+v", text, got, ok, err, want)
		}
	}
}

// trimmed drops the positions no step reached, which a histogram does not
// show.
func trimmed(perPos []int) []int {
	for len(perPos) > 0 && perPos[len(perPos)-1] == 0 {
		perPos = perPos[:len(perPos)-1]
	}
	if len(perPos) == 0 {
		return nil
	}
	return perPos
}
