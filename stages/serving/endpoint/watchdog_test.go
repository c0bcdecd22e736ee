package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/pipenet"
)

// TestWatchdog_OnDown: an endpoint's OnDown hears which URL hung and why,
// and the watchdog asked it for one token in the endpoint's own API, with
// its model, as a managed endpoint's restart will want to know.
func TestWatchdog_OnDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var bodies []map[string]any
		serve := func(faults server.Faults, seen bool) http.Handler {
			s, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: 2, MeanTokens: 20}), Name: "m", Speed: 100, Faults: faults})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if seen && r.Method == http.MethodPost {
					b, _ := io.ReadAll(r.Body)
					var m map[string]any
					json.Unmarshal(b, &m)
					mu.Lock()
					bodies = append(bodies, m)
					mu.Unlock()
					r.Body = io.NopCloser(bytes.NewReader(b))
				}
				s.ServeHTTP(w, r)
			})
		}
		shared := pool.SharedClient
		pool.SharedClient = pipenet.ServeHosts(t, map[string]http.Handler{"good": serve(server.Faults{}, false), "hung": serve(server.Faults{HangAll: true}, true)})
		t.Cleanup(func() { pool.SharedClient = shared })

		e, err := New(&specs.Spec{}, &specs.Endpoint{Name: "target", API: "openai", Model: "m", URLs: []string{"http://good/v1", "http://hung/v1"},
			Concurrency: specs.Concurrency{N: 4}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		type down struct {
			url string
			why error
		}
		var downs []down
		e.OnDown = func(url string, why error) { downs = append(downs, down{url, why}) }
		cl := &Client{Endpoint: e, Retries: 0, Timeout: time.Hour, Instance: "generate[d]", Share: 1}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 10 {
					if _, err := cl.Ask(context.Background(), &backend.Request{Messages: []conv.Message{{Role: conv.User, Content: "hello"}}, MaxTokens: 32}, &Tally{}); err != nil {
						t.Errorf("ask: %v", err)
					}
				}
			})
		}
		wg.Wait()
		if len(downs) != 1 || downs[0].url != "http://hung/v1" || !errors.Is(downs[0].why, pool.ErrHung) {
			t.Fatalf("OnDown heard %v; want http://hung/v1 once, hung", downs)
		}
		var probes int
		for _, b := range bodies {
			if b["max_tokens"] == 1.0 {
				probes++
				if b["model"] != "m" || b["messages"] == nil {
					t.Errorf("the one-token request was %v; want the endpoint's chat request, with its model", b)
				}
			}
		}
		if probes == 0 {
			t.Errorf("the hung URL got %v; want a one-token request among them", bodies)
		}
	})
}
