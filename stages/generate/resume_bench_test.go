package generate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/state"
)

// BenchmarkGenerate_Resume measures how long a resumed run takes to send its
// first request: a store holding 1,000,000 loaded prompts of which 10% were
// answered before the run was killed, built by bulk inserts rather than by
// loading. It reports the seconds from Run to the first generation request
// the server receives, and the same when another dataset's instance was
// killed running beside it (beside-running-s). EAGLET_BENCH_RESUME sets the prompts and
// EAGLET_BENCH_RESUME_DONE the fraction done (default 0.1):
//
//	go test ./stages/generate -run '^$' -bench Resume -benchtime 1x
func BenchmarkGenerate_Resume(b *testing.B) {
	n, done := 1_000_000, 0.1
	if v := os.Getenv("EAGLET_BENCH_RESUME"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("EAGLET_BENCH_RESUME_DONE"); v != "" {
		done, _ = strconv.ParseFloat(v, 64)
	}
	dir := b.TempDir()
	srv, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})})
	if err != nil {
		b.Fatal(err)
	}
	var (
		mu    sync.Mutex
		first chan struct{}
	)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			if first != nil {
				close(first)
				first = nil
			}
			mu.Unlock()
		}
		srv.ServeHTTP(w, r)
	}))
	b.Cleanup(func() { hs.Close(); srv.Close() })

	writePrompts(b, filepath.Join(dir, "prompts.jsonl"), 4)
	writePromptsAbout(b, filepath.Join(dir, "other.jsonl"), 4, "topic")
	spec := fmt.Sprintf(`version: 1
name: resume
state: state.db
datasets:
  d: {source: prompts.jsonl}
  e: {source: other.jsonl}
endpoints:
  sim: {api: openai, urls: ["%s/v1"], concurrency: 64}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64}}
`, hs.URL)
	p, store := enginetest.Open(b, dir, spec)
	// A real run of a few prompts leaves both instances with their
	// fingerprints; the bulk inserts then make the store as large as a
	// real run of n prompts killed with a tenth answered would.
	enginetest.Run(b, p, store, nil)
	fillResumeStore(b, store, n, int(float64(n)*done))

	// resume runs until the server sees its first request and returns the
	// time that took; the run then stops as an interrupted one does.
	resume := func() time.Duration {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := make(chan struct{})
		mu.Lock()
		first = got
		mu.Unlock()
		start := time.Now()
		var took time.Duration
		go func() {
			<-got
			took = time.Since(start)
			cancel()
		}()
		_, err := p.Run(ctx, store, engine.RunOptions{Log: &discard{}})
		if took == 0 {
			b.Fatalf("the run sent no request (err %v)", err)
		}
		return took
	}
	// The first resume after the bulk fill matches every outcome against
	// the input, as after an upgrade or an input change; a run killed after
	// it had done so leaves a store the next run dispatches from at once.
	firstResume := resume()
	var total time.Duration
	for b.Loop() {
		total += resume()
	}
	// A run of several datasets killed: e's instance was running too, so
	// answers d could reuse may have been stored since d last looked.
	killed := func(id string) {
		in, err := store.GetInstance(id)
		if err != nil || in == nil {
			b.Fatalf("%s: %v", id, err)
		}
		in.Status = "running"
		if err := store.PutInstance(in); err != nil {
			b.Fatal(err)
		}
	}
	killed("generate[d]")
	killed("generate[e]")
	beside := resume()
	b.ReportMetric(beside.Seconds(), "beside-running-s")
	b.ReportMetric(firstResume.Seconds(), "first-resume-s")
	b.ReportMetric(total.Seconds()/float64(b.N), "to-first-request-s")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// fillResumeStore adds n loaded prompts to load[d], of which the first
// answered (in key order of insertion, not of keys) have a done answer in
// generate[d] under its fingerprint, each in one transaction.
func fillResumeStore(b *testing.B, store *state.Store, n, answered int) {
	b.Helper()
	gen, err := store.GetInstance("generate[d]")
	if err != nil || gen == nil {
		b.Fatalf("generate[d] did not run: %v", err)
	}
	hash := func(data []byte) string {
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:12])
	}
	loaded := make([]state.Item, 0, n)
	var answers []state.Item
	for i := range n {
		msgs := []conv.Message{{Role: "user", Content: fmt.Sprintf("Resume question %d: explain idea %d in detail.", i, i*7)}}
		rec := conv.Record{Key: conv.ContentKey(msgs, nil), Dataset: "d", Source: conv.Source{File: "prompts.jsonl", Line: i + 1, Index: i}, Messages: msgs}
		data, err := json.Marshal(&rec)
		if err != nil {
			b.Fatal(err)
		}
		chash := hash([]byte(rec.Key + "content"))
		it := state.Item{Key: rec.Key, FP: "load", Data: data, OutHash: hash(data), Chash: chash}
		loaded = append(loaded, it)
		if i < answered {
			rec.Generation = &conv.Generation{Content: "An answer.", FinishReason: "stop", CompletionTokens: 3}
			out, err := json.Marshal(&rec)
			if err != nil {
				b.Fatal(err)
			}
			answers = append(answers, state.Item{Key: rec.Key, FP: gen.Fingerprint, InHash: it.OutHash, Data: out,
				OutHash: hash(out), Chash: hash(out), InChash: chash, CompletionTokens: 3, Requests: 1})
		}
	}
	if err := store.Commit("load[d]", loaded); err != nil {
		b.Fatal(err)
	}
	if err := store.Commit("generate[d]", answers); err != nil {
		b.Fatal(err)
	}
	// What the load that wrote them would have recorded of its output.
	ld, err := store.GetInstance("load[d]")
	if err != nil {
		b.Fatal(err)
	}
	if ld.OutputDigest, ld.Stats.Records, err = store.OutputDigest(context.Background(), "load[d]"); err != nil {
		b.Fatal(err)
	}
	if err := store.PutInstance(ld); err != nil {
		b.Fatal(err)
	}
	// Killed while running.
	gen.Status = "running"
	if err := store.PutInstance(gen); err != nil {
		b.Fatal(err)
	}
}
