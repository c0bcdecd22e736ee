package generate_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/pipenet"
)

// The watchdog's acceptance: a server whose health answers but whose
// generations hang, and a URL that refuses connections, are each out of
// service within 30 s, and the run finishes on the other URL with every
// record answered once and the output of a run against that URL alone.
func TestWatchdog_BadURLOutOfService(t *testing.T) {
	const n = 120
	for _, tc := range []struct {
		name, bad string
		stream    bool
		why       string
		// retried is the kind of retry the bad URL costs, as status and
		// the run's summary count them.
		retried string
	}{
		{"hung, streaming", "hung", true, "no token in ", "url hung"},
		{"hung, not streaming", "hung", false, "no token in ", "url hung"},
		{"refusing", "refused", true, "connection refused", "network: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alone := watchdogRun(t, n, tc.stream, "good")
			both := watchdogRun(t, n, tc.stream, "good", tc.bad)
			line := both.lineWith("http://" + tc.bad + "/v1 out of service")
			if line == "" || !strings.Contains(line, tc.why) {
				t.Fatalf("log:\n%s\nwant a line saying http://%s/v1 is out of service: %s...", both.log, tc.bad, tc.why)
			}
			if at := both.at[line]; at > 30*time.Second {
				t.Errorf("%s went out of service %s into the run; want within 30s", tc.bad, at)
			}
			// A budget of n samples fits every record only if none is
			// counted twice for a request sent again.
			if both.done != n || both.sent["good"] != n {
				t.Errorf("%d of %d records done, the good URL answered %d; want every record, answered once", both.done, n, both.sent["good"])
			}
			if both.retries[tc.retried] == 0 {
				t.Errorf("retries %v; want the requests the bad URL cost counted as %q", both.retries, tc.retried)
			}
			if !bytes.Equal(both.out, alone.out) {
				t.Errorf("the output differs from a run against the good URL alone")
			}
			if both.took > alone.took+40*time.Second {
				t.Errorf("the run took %s, against %s on the good URL alone", both.took, alone.took)
			}
		})
	}
}

// watchdogResult is what a run against some of the test's servers did.
type watchdogResult struct {
	log  string
	at   map[string]time.Duration // each log line's time into the run
	out  []byte
	done int
	sent map[string]int // generation requests each host received
	took time.Duration
	// retries are generate's, by kind.
	retries map[string]int
}

func (r *watchdogResult) lineWith(s string) string {
	for _, l := range strings.Split(r.log, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// timedLog notes when each line of the run's log was written.
type timedLog struct {
	mu    sync.Mutex
	start time.Time
	b     bytes.Buffer
	at    map[string]time.Duration
}

func (l *timedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if _, ok := l.at[line]; !ok {
			l.at[line] = time.Since(l.start)
		}
	}
	return l.b.Write(p)
}

// watchdogRun generates answers to n prompts through an endpoint of the
// hosts named, in a bubble: "good" is a sim server, "hung" one whose
// generations all hang, and any other host refuses connections.
func watchdogRun(t *testing.T, n int, stream bool, hosts ...string) *watchdogResult {
	r := &watchdogResult{sent: map[string]int{}}
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		sim := func(host string, faults server.Faults) http.Handler {
			s, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: 5, MeanTokens: 30}), Speed: 100, MaxRunning: 16, Faults: faults})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.Method == http.MethodPost {
					mu.Lock()
					r.sent[host]++
					mu.Unlock()
				}
				s.ServeHTTP(w, req)
			})
		}
		useClient(t, pipenet.ServeHosts(t, map[string]http.Handler{"good": sim("good", server.Faults{}), "hung": sim("hung", server.Faults{HangAll: true})}))
		var urls []string
		for _, h := range hosts {
			urls = append(urls, fmt.Sprintf("%q", "http://"+h+"/v1"))
		}
		dir := t.TempDir()
		writePrompts(t, filepath.Join(dir, "prompts.jsonl"), n)
		p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: watchdog
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {api: openai, urls: [%s], concurrency: 16, options: {stream: %t}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64, timeout: 10m, budget: {samples: %d}}}
  - {name: merge, uses: merge, needs: [generate], with: {out: out.jsonl}}
`, strings.Join(urls, ", "), stream, n))
		log := &timedLog{start: time.Now(), at: map[string]time.Duration{}}
		results, err := p.Run(context.Background(), store, engine.RunOptions{Log: log})
		if err != nil {
			t.Fatalf("run: %v\n%s", err, log.b.String())
		}
		for _, res := range results {
			if res.Node.ID == "generate[d]" {
				r.retries = res.Retries
			}
		}
		r.took = time.Since(log.start)
		r.log, r.at = log.b.String(), log.at
		r.done = enginetest.Count(t, store, "generate[d]", stages.Done)
		r.out = mustRead(t, filepath.Join(dir, "out.jsonl"))
	})
	return r
}
