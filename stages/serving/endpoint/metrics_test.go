package endpoint

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// metricsServer serves SGLang's load metrics with running requests.
func metricsServer(t *testing.T, running int) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "sglang:num_running_reqs %d\nsglang:token_usage 0.5\n", running)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestLoadWatch_FollowsReplicas reads where a launched endpoint's replicas
// serve at each reading: a restarted replica's new port is read, and one
// that is down while the other answers leaves the load to the one up.
func TestLoadWatch_FollowsReplicas(t *testing.T) {
	a, b, c := metricsServer(t, 3), metricsServer(t, 5), metricsServer(t, 7)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	var mu sync.Mutex
	var current []string
	set := func(urls ...string) {
		mu.Lock()
		defer mu.Unlock()
		current = metricsURLs(urls)
	}
	var logged []string
	w := newLoadWatch(func() []string {
		mu.Lock()
		defer mu.Unlock()
		return current
	}, false, 0, func(f string, args ...any) { logged = append(logged, fmt.Sprintf(f, args...)) })
	// poll holds the watch's lock while it spawns: run the read after.
	var reads []func()
	w.spawn = func(f func()) { reads = append(reads, f) }
	read := func() {
		for _, f := range reads {
			f()
		}
		reads = nil
	}

	for _, tc := range []struct {
		name    string
		urls    []string
		running float64
	}{
		{"both replicas up", []string{a.URL + "/v1", b.URL + "/v1"}, 8},
		{"replica 1 restarted on another port", []string{a.URL + "/v1", c.URL + "/v1"}, 10},
		{"replica 0 down", []string{down.URL + "/v1", c.URL + "/v1"}, 7},
	} {
		set(tc.urls...)
		var got serverLoad
		if !w.poll(func(l serverLoad) { got = l }) {
			t.Fatalf("%s: the watch is off: %q", tc.name, logged)
		}
		read()
		if got.running != tc.running || got.usage != 0.5 {
			t.Errorf("%s: load %+v, want %v running at usage 0.5", tc.name, got, tc.running)
		}
	}
	if want := "reading server load from " + a.URL + "/metrics, " + b.URL + "/metrics"; len(logged) == 0 || logged[0] != want {
		t.Errorf("log %q, want first %q", logged, want)
	}
}

// TestLoadWatch_NoneAnswers turns the watch off when no replica exports
// metrics, so latency decides.
func TestLoadWatch_NoneAnswers(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(s.Close)
	w := newLoadWatch(func() []string { return metricsURLs([]string{s.URL}) }, false, 0, nil)
	var read func()
	w.spawn = func(f func()) { read = f }
	w.poll(func(serverLoad) { t.Error("used a load no server gave") })
	read()
	if !w.isOff() {
		t.Error("the watch is on with no metrics")
	}
}
