package openai

import (
	"testing"
	"testing/synctest"

	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// TestClient_MetaInfo: a chat request asking for meta_info is sent
// without a stream (SGLang refuses return_meta_info on one, as the sim
// does) even from a streaming endpoint, and gets the speculative figures
// of its choice.
func TestClient_MetaInfo(t *testing.T) {
	m := sim.New(sim.Config{Seed: 6, MeanTokens: 90})
	d := sim.Drafter{Quality: 0.7, Tokens: 4}
	synctest.Test(t, func(t *testing.T) {
		hc := serveSim(t, server.Config{Model: m, Drafter: d})
		c := clientVia(t, "http://sim", hc, Config{Stream: true})
		temp := 0.0
		for i := range 10 {
			var raw []byte
			req := &backend.Request{Messages: conversation(i), MaxTokens: 150, Sampling: backend.Sampling{Temperature: &temp},
				MetaInfo: func(b []byte) { raw = b }}
			g, err := c.Generate(t.Context(), req)
			if err != nil {
				t.Fatalf("conversation %d: %v", i, err)
			}
			got, ok, err := accept.ParseSGLang(raw)
			if err != nil || !ok {
				t.Fatalf("conversation %d: meta_info %s: ok=%v %v", i, raw, ok, err)
			}
			p := sim.Prompt{Messages: req.Messages}
			want := m.Speculate(d, p, m.Answer(p, sim.Options{MaxTokens: 150}), 0)
			if got.Verify != want.Verify || got.Accepted != want.Accepted || got.CompletionTokens != g.CompletionTokens {
				t.Fatalf("conversation %d: got %+v; the server decoded %+v", i, got, want)
			}
		}
	})
}
