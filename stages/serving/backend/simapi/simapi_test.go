package simapi

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

func request(max int) *backend.Request {
	return &backend.Request{
		Messages:  []conv.Message{{Role: conv.User, Content: "Tell me about rivers."}},
		MaxTokens: max,
	}
}

func TestBackend_Generate_MatchesModel(t *testing.T) {
	m := sim.New(sim.Config{Seed: 4, Reasoning: 0.2})
	g, err := New(m, Config{}).Generate(context.Background(), request(500))
	if err != nil {
		t.Fatal(err)
	}
	want := m.Answer(sim.Prompt{Messages: request(0).Messages}, sim.Options{MaxTokens: 500})
	if g.Content != want.Content || g.Reasoning != want.Reasoning || g.CompletionTokens != want.CompletionTokens() {
		t.Fatalf("generation %+v differs from the model's answer", g)
	}
	if g.MaxTokens != 500 || g.Model != "sim" || g.PromptTokens == 0 {
		t.Fatalf("generation %+v", g)
	}
}

func TestBackend_Generate_SpeedAndProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := sim.New(sim.Config{Seed: 4, MeanTokens: 100, Sigma: 0.01})
		var seen []int
		req := request(40)
		req.Progress = func(p backend.Progress) { seen = append(seen, p.Tokens) }
		start := time.Now()
		g, err := New(m, Config{Speed: 400}).Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < 90*time.Millisecond {
			t.Errorf("%d tokens at 400/s took %v", g.CompletionTokens, el)
		}
		if len(seen) < 2 || seen[len(seen)-1] != g.CompletionTokens {
			t.Errorf("progress %v, completion %d", seen, g.CompletionTokens)
		}
	})
}

func TestBackend_Generate_Cancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := sim.New(sim.Config{Seed: 4, MeanTokens: 1000, Sigma: 0.01})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		_, err := New(m, Config{Speed: 100}).Generate(ctx, request(1000))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
	})
}

func TestBackend_Generate_ContextTooLong(t *testing.T) {
	m := sim.New(sim.Config{Seed: 4, Context: 100})
	_, err := New(m, Config{}).Generate(context.Background(), request(200))
	if k, _ := backend.Classify(err); k != backend.Permanent {
		t.Fatalf("err = %v, kind %v, want permanent", err, k)
	}
}
