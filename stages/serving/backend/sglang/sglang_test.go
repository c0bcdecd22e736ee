package sglang

import (
	"cmp"
	"context"
	"encoding/json/jsontext"
	"errors"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/backendtest"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/pipenet"
)

func TestClient_AgainstSimServer(t *testing.T) {
	m := sim.New(sim.Config{Seed: 9, MeanTokens: 80, Reasoning: 0.3})
	for _, tc := range []struct {
		name   string
		stream bool
		cfg    server.Config
	}{
		{"plain", false, server.Config{}},
		{"stream cumulative", true, server.Config{}},
		{"stream incremental", true, server.Config{Incremental: true}},
		{"weights updated in place", true, server.Config{Stack: server.Stack{WeightVersion: "step-1200"}}},
		{"faults", false, server.Config{Faults: server.Faults{Seed: 1, Error500: 0.1, RateLimit: 0.1, Drop: 0.05,
			Hang: 0.02, HangFor: 50 * time.Millisecond, BadJSON: 0.05, Truncate: 0.1, RetryAfter: time.Millisecond}}},
		{"stream faults", true, server.Config{Faults: server.Faults{Seed: 2, Error500: 0.1, Truncate: 0.1,
			BadJSON: 0.05, StreamError: 0.1, Drop: 0.05}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.cfg.Model = m
				// In the bubble, the faults' hangs and Retry-After take no
				// wall time.
				s, err := server.New(tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				p, err := pool.New(pool.Config{URLs: []string{"http://sim"}, Client: pipenet.Serve(t, s), Rest: 5 * time.Millisecond, MaxRest: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				c, err := New(Config{Pool: p, Stream: tc.stream, Model: "sim"})
				if err != nil {
					t.Fatal(err)
				}
				for i := range 40 {
					ids := []int{100, 200 + i}
					var progress int
					req := &backend.Request{InputIDs: ids, MaxTokens: 150, Progress: func(p backend.Progress) { progress = p.Tokens }}
					g, err := backendtest.Retry(c, req)
					if err != nil {
						t.Fatalf("prompt %d: %v", i, err)
					}
					want := m.Answer(sim.Prompt{IDs: ids}, sim.Options{MaxTokens: 150})
					if g.Content != want.Content || g.Reasoning != want.Reasoning || g.FinishReason != want.FinishReason ||
						g.CompletionTokens != want.CompletionTokens() || !reflect.DeepEqual(g.OutputIDs, want.OutputIDs()) ||
						g.MaxTokens != 150 || g.PromptTokens != 2 {
						t.Fatalf("prompt %d: got %+v\nwant %+v", i, g, want.Generation("sim", 150))
					}
					// meta_info's weight_version says which weights answered.
					if v := cmp.Or(tc.cfg.Stack.WeightVersion, "default"); g.Served == nil || g.Served.WeightVersion != v {
						t.Fatalf("prompt %d: served %+v, want weight version %s", i, g.Served, v)
					}
					if tc.stream && progress != g.CompletionTokens {
						t.Fatalf("prompt %d: last progress %d of %d tokens", i, progress, g.CompletionTokens)
					}
				}
			})
		})
	}
}

func TestClient_NeedsTokenIDs(t *testing.T) {
	c, _ := New(Config{URLs: []string{"http://127.0.0.1:1"}})
	_, err := c.Generate(context.Background(), &backend.Request{Messages: []conv.Message{{Role: "user", Content: "x"}}, MaxTokens: 5})
	if k, _ := backend.Classify(err); k != backend.Permanent {
		t.Fatalf("err %v: kind %v", err, k)
	}
}

func TestClient_ContextTooLong(t *testing.T) {
	url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Context: 100})})
	c, _ := New(Config{URLs: []string{url}})
	_, err := c.Generate(context.Background(), &backend.Request{InputIDs: make([]int, 50), MaxTokens: 80})
	var be *backend.Error
	if !errors.As(err, &be) || be.Kind != backend.Permanent || be.Status != 400 {
		t.Fatalf("err %v", err)
	}
}

func BenchmarkClient_Instant(b *testing.B) {
	m := sim.New(sim.Config{Seed: 1, MeanTokens: 50})
	c, _ := New(Config{URLs: []string{simtest.Serve(b, server.Config{Model: m})}})
	b.SetParallelism(500) // with GOMAXPROCS 2: 1,000 requests in flight
	var n int64
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, err := c.Generate(context.Background(), &backend.Request{InputIDs: []int{i, int(n)}, MaxTokens: 100}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// TestCountIDs counts a stream event's ids without parsing them, as the
// test of cumulative events needs: absent and null are none.
func TestCountIDs(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want int
	}{{"", 0}, {"null", 0}, {"[]", 0}, {"[ ]", 0}, {"[7]", 1}, {" [1, 2,3] ", 3}} {
		if got := countIDs(jsontext.Value(tt.raw)); got != tt.want {
			t.Errorf("countIDs(%q) = %d; want %d", tt.raw, got, tt.want)
		}
	}
}
