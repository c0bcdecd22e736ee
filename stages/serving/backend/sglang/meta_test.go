package sglang

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/pipenet"
)

// TestClient_MetaInfo: a request asking for meta_info gets the
// speculative figures the server reported, streamed or not, and one that
// does not ask gets the same answer.
func TestClient_MetaInfo(t *testing.T) {
	m := sim.New(sim.Config{Seed: 4, MeanTokens: 90})
	d := sim.Drafter{Quality: 0.8, Tokens: 3}
	for _, stream := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			s, err := server.New(server.Config{Model: m, Drafter: d})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			p, err := pool.New(pool.Config{URLs: []string{"http://sim"}, Client: pipenet.Serve(t, s), Rest: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(Config{Pool: p, Stream: stream, Model: "sim"})
			if err != nil {
				t.Fatal(err)
			}
			temp := 0.0
			for i := range 10 {
				ids := []int{100, 300 + i}
				var raw []byte
				req := &backend.Request{InputIDs: ids, MaxTokens: 200, Sampling: backend.Sampling{Temperature: &temp},
					MetaInfo: func(b []byte) { raw = b }}
				g, err := c.Generate(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				got, ok, err := accept.ParseSGLang(raw)
				if err != nil || !ok {
					t.Fatalf("stream=%v prompt %d: meta_info %s: ok=%v %v", stream, i, raw, ok, err)
				}
				a := m.Answer(sim.Prompt{IDs: ids}, sim.Options{MaxTokens: 200})
				want := m.Speculate(d, sim.Prompt{IDs: ids}, a, 0)
				if got.Verify != want.Verify || got.Accepted != want.Accepted || got.Drafted != want.Drafted ||
					got.CompletionTokens != g.CompletionTokens {
					t.Fatalf("stream=%v prompt %d: got %+v; the server decoded %+v over %d tokens", stream, i, got, want, g.CompletionTokens)
				}
			}
		})
	}
}
