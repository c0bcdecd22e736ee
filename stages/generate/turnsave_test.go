package generate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/state"
)

// questions is a sim chat server, in the test's bubble, that counts the generation requests it
// receives by the number of messages they send (1: a first question, 3: a
// second, 5: a third); before answering it calls hook, which may refuse
// the request or hold it.
type questions struct {
	URL   string
	mu    sync.Mutex
	asked map[int]int
	hook  func(messages int) (refuse bool, hold time.Duration)
}

func serveQuestions(t *testing.T, seed uint64) *questions {
	t.Helper()
	model, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: seed, MeanTokens: 40})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Close)
	q := &questions{asked: map[int]int{}}
	q.URL = serveInBubble(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		n := len(req.Messages)
		q.mu.Lock()
		if r.Method == http.MethodPost {
			q.asked[n]++
		}
		hook := q.hook
		q.mu.Unlock()
		if hook != nil {
			refuse, hold := hook(n)
			if refuse {
				http.Error(w, `{"error":{"message":"refused"}}`, http.StatusBadRequest)
				return
			}
			time.Sleep(hold)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		model.ServeHTTP(w, r)
	}))
	return q
}

// take returns the requests counted since the last call.
func (q *questions) take() map[int]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := maps.Clone(q.asked)
	clear(q.asked)
	return out
}

func (q *questions) setHook(hook func(messages int) (bool, time.Duration)) {
	q.mu.Lock()
	q.hook = hook
	q.mu.Unlock()
}

// questionSpec writes n records asking the questions (%d in the first: the
// record's number) into dir and returns a spec generating their answers from url.
func questionSpec(t *testing.T, dir, url string, n int, asks ...string) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		turns := slices.Clone(asks)
		turns[0] = fmt.Sprintf(asks[0], i)
		line, _ := json.Marshal(map[string]any{"turns": turns})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "mt.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`version: 1
name: questions
state: state.db
datasets: {mt: {source: mt.jsonl}}
endpoints: {e: {api: openai, urls: ["%s/v1"], model: sim, concurrency: 4}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 200, retries: 0}}
`, url)
}

// conversations reads each answered record of dir's store: the messages
// with the target's answers, and its last answer.
func conversations(t *testing.T, store *state.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := store.EachOutput(context.Background(), []string{"generate[mt]"}, func(r state.Row) error {
		var rec conv.Record
		if err := json.Unmarshal(r.Data, &rec); err != nil {
			return err
		}
		b, err := json.Marshal([]any{rec.Messages, rec.Generation.Content})
		out[r.Key] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConverse_KeepsAnswersSoFar: a record of two questions (MT-Bench)
// whose second answer is not had (the run was killed, or the request
// failed) keeps its first answer: the next run asks only the second
// question, conditioned on the same first answer, and the record's
// answers are those a run without the interruption gives. --force asks
// both again.
func TestConverse_KeepsAnswersSoFar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := serveQuestions(t, 5)
		dir, clean := t.TempDir(), t.TempDir()
		ask := []string{"Question %d: name a river.", "Now name a lake near it."}
		spec := questionSpec(t, dir, q.URL, 12, ask...)
		questionSpec(t, clean, q.URL, 12, ask...)

		// Every second question refused: each record fails after its first answer.
		q.setHook(func(n int) (bool, time.Duration) { return n > 1, 0 })
		enginetest.OpenAndRun(t, dir, spec)
		if got := q.take(); got[1] != 12 || got[3] != 12 {
			t.Fatalf("first run: %v questions asked by messages sent; want 12 first and 12 second", got)
		}
		// The next run asks the second questions only.
		q.setHook(nil)
		p, store, _ := enginetest.OpenAndRun(t, dir, spec)
		if got := q.take(); got[1] != 0 || got[3] != 12 {
			t.Errorf("second run: %v questions asked by messages sent; want only the 12 second ones", got)
		}
		// The answers are those of a run that was never interrupted.
		_, cleanStore, _ := enginetest.OpenAndRun(t, clean, spec)
		q.take()
		got, want := conversations(t, store), conversations(t, cleanStore)
		if len(got) != 12 || len(want) != 12 {
			t.Fatalf("%d and %d answered records; want 12", len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("record %s after the interruption:\n%s\nwant, as without one:\n%s", k, got[k], w)
			}
		}
		// Nothing is kept once the records are answered: --force asks both
		// questions again.
		force := map[*engine.Node]bool{}
		for _, n := range enginetest.Stage(t, p, "generate", "mt") {
			force[n] = true
		}
		if _, err := p.Run(context.Background(), store, engine.RunOptions{Force: force, Log: &bytes.Buffer{}}); err != nil {
			t.Fatal(err)
		}
		if got := q.take(); got[1] != 12 || got[3] != 12 {
			t.Errorf("--force: %v questions asked by messages sent; want 12 first and 12 second", got)
		}
	})
}

// TestConverse_StopsBetweenAnswers: once a run is told to stop (Ctrl-C),
// a record of several questions whose answers so far are kept asks no
// further question: the run ends when the requests in flight do, not when
// every conversation in flight has had all its answers, and the next run
// asks only the questions left.
func TestConverse_StopsBetweenAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := serveQuestions(t, 6)
		dir := t.TempDir()
		spec := questionSpec(t, dir, q.URL, 8, "Question %d: name a river.", "A lake near it?", "And a mountain?")
		p, store := enginetest.Open(t, dir, spec)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var once sync.Once
		q.setHook(func(n int) (bool, time.Duration) {
			if n != 3 {
				return false, 0
			}
			// The first second question: the user presses Ctrl-C while it runs.
			once.Do(cancel)
			return false, 300 * time.Millisecond
		})
		_, _ = p.Run(ctx, store, engine.RunOptions{Log: &bytes.Buffer{}})
		stopped := q.take()
		if stopped[5] != 0 {
			t.Errorf("after the stop the run asked %d third questions; want none: the records wait for the next run", stopped[5])
		}
		q.setHook(nil)
		enginetest.Run(t, p, store, nil)
		rest := q.take()
		if stopped[1]+rest[1] != 8 || stopped[3]+rest[3] != 8 || rest[5] != 8 {
			t.Errorf("questions asked (by messages sent) in the stopped run %v and the next %v; want each of the 8 records' three questions once", stopped, rest)
		}
	})
}
