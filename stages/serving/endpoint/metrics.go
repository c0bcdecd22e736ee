package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/internal/promtext"
	"github.com/hashicorp/go-multierror"
)

// serverLoad is what an inference server says about its load.
type serverLoad struct {
	// running and queued are requests decoding and waiting, summed over
	// the endpoint's servers.
	running, queued float64
	// usage is the KV cache in use, 0 to 1, averaged over the servers.
	usage float64
	// preempted counts retractions (SGLang) or preemptions (vLLM) since
	// the servers started.
	preempted float64
	// capacity is the KV cache's size in tokens, summed over the servers
	// (0: not exported).
	capacity float64
}

// Metric names SGLang (python/sglang/srt/metrics/collector.py) and vLLM
// (vllm/v1/metrics/loggers.py; gpu_cache_usage_perc before 0.10) export.
var loadMetrics = map[string]func(l *serverLoad, v float64){
	"sglang:num_running_reqs":             func(l *serverLoad, v float64) { l.running += v },
	"vllm:num_requests_running":           func(l *serverLoad, v float64) { l.running += v },
	"sglang:num_queue_reqs":               func(l *serverLoad, v float64) { l.queued += v },
	"vllm:num_requests_waiting":           func(l *serverLoad, v float64) { l.queued += v },
	"sglang:token_usage":                  func(l *serverLoad, v float64) { l.usage = max(l.usage, v) },
	"vllm:kv_cache_usage_perc":            func(l *serverLoad, v float64) { l.usage = max(l.usage, v) },
	"vllm:gpu_cache_usage_perc":           func(l *serverLoad, v float64) { l.usage = max(l.usage, v) },
	"sglang:num_retracted_requests_total": func(l *serverLoad, v float64) { l.preempted += v },
	"sglang:max_total_num_tokens":         func(l *serverLoad, v float64) { l.capacity += v },
	"vllm:num_preemptions_total":          func(l *serverLoad, v float64) { l.preempted += v },
}

// parseLoad reads Prometheus' text format (promtext), keeping the load
// metrics. A server with several engines (data-parallel ranks, labels)
// has a series each: counts add up, and the fullest cache speaks for the
// server. ok is false when the text has none of the metrics (not an
// inference server's).
func parseLoad(r io.Reader) (l serverLoad, ok bool, err error) {
	samples, err := promtext.Parse(r)
	if err != nil {
		return l, false, err
	}
	for _, s := range samples {
		if add := loadMetrics[s.Name]; add != nil {
			add(&l, s.Value)
			ok = true
		}
	}
	return l, ok, nil
}

// loadWatch polls the endpoint's servers' /metrics for concurrency: auto.
// It polls only when asked (on requests' comings and goings), at most once
// per interval, so an idle run makes no requests and needs no goroutine to
// stop.
type loadWatch struct {
	// urls are the metrics URLs to read now: a launched endpoint's change
	// as its replicas start and restart.
	urls   func() []string
	client *http.Client
	every  time.Duration
	// named is set when the spec gave the URL: its failure is worth a
	// louder word than a server that simply exports none.
	named bool
	logf  func(string, ...any)
	// now, read and spawn are the clock, the fetch and how a fetch runs
	// beside the requests: time.Now, the servers' /metrics and a
	// goroutine, or in BenchmarkAutoVirtual a simulated clock, a virtual
	// server's counters and a step of its loop.
	now   func() time.Time
	read  func() (serverLoad, error)
	spawn func(func())

	mu    sync.Mutex
	last  time.Time
	busy  bool
	found bool
	// off is set once discovery found no metrics: latency decides.
	off bool
}

// metricsURLs returns where the servers behind base URLs export metrics:
// the server root's /metrics, as SGLang and vLLM serve it.
func metricsURLs(bases []string) []string {
	var out []string
	for _, b := range bases {
		u, err := url.Parse(b)
		if err != nil || u.Host == "" {
			continue
		}
		out = append(out, (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/metrics"}).String())
	}
	return out
}

func newLoadWatch(urls func() []string, named bool, every time.Duration, logf func(string, ...any)) *loadWatch {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	w := &loadWatch{urls: urls, named: named, every: every, logf: logf, now: time.Now,
		spawn: func(f func()) { go f() }, client: &http.Client{Timeout: 5 * time.Second}}
	w.read = w.fetch
	return w
}

// poll fetches the load in the background when an interval has passed
// since the last fetch, calling use with it. It reports whether the
// watch is in use: false once discovery found no metrics.
func (w *loadWatch) poll(use func(serverLoad)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.off {
		return false
	}
	if w.busy || w.now().Sub(w.last) < w.every {
		return true
	}
	w.busy, w.last = true, w.now()
	w.spawn(func() {
		l, err := w.read()
		w.mu.Lock()
		w.busy = false
		switch {
		case err == nil:
			if !w.found {
				w.found = true
				w.logf("reading server load from %s", strings.Join(w.urls(), ", "))
			}
		case w.found:
			w.logf("server metrics: %v", err)
		case w.named:
			w.off = true
			w.logf("server metrics: %v; concurrency follows latency", err)
		default:
			w.off = true
			w.logf("no server metrics (%v); concurrency follows latency", err)
		}
		w.mu.Unlock()
		if err == nil {
			use(l)
		}
	})
	return true
}

// isOff says whether discovery found no metrics.
func (w *loadWatch) isOff() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.off
}

// fetch sums the load of the servers that answer. A replica being
// restarted is out of rotation and takes no requests, so leaving it out
// is the load the others carry; only when none answers is it an error.
func (w *loadWatch) fetch() (serverLoad, error) {
	var (
		loads []serverLoad
		errs  error
	)
	for _, u := range w.urls() {
		l, err := w.fetchOne(u)
		if err != nil {
			errs = multierror.Append(errs, err)
			continue
		}
		loads = append(loads, l)
	}
	if len(loads) == 0 {
		if errs == nil {
			errs = errors.New("no server to read metrics from")
		}
		return serverLoad{}, errs
	}
	var total serverLoad
	for _, l := range loads {
		total.running += l.running
		total.queued += l.queued
		total.preempted += l.preempted
		total.capacity += l.capacity
		total.usage += l.usage / float64(len(loads))
	}
	return total, nil
}

func (w *loadWatch) fetchOne(u string) (serverLoad, error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.client.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return serverLoad{}, err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return serverLoad{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return serverLoad{}, fmt.Errorf("%s: http %d", u, resp.StatusCode)
	}
	l, ok, err := parseLoad(resp.Body)
	if err != nil {
		return l, fmt.Errorf("%s: %w", u, err)
	}
	if !ok {
		return l, fmt.Errorf("%s has none of SGLang's or vLLM's load metrics", u)
	}
	return l, nil
}
