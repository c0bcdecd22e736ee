package generate_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/rusage"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
)

const (
	scaleServers  = 64
	scalePerServe = 256
)

// BenchmarkScaleOut has one eaglet coordinate 64 simulated servers with 256
// requests in flight each (16,384 at once), to show whether the
// coordinator is what limits a large deployment. The servers run in a
// child process (this test binary again), so the figures are the
// coordinator's alone and the 2 × 16,384 loopback sockets do not share one
// process's file limit. Answers average 20 tokens, at a speed that makes
// them take about 20 s (answers-20s: a 1,000-token answer at 50 tokens/s,
// so keeping 16,384 in flight takes about 800 requests/s) or about 4 s
// (answers-4s: 4,000 requests/s, more than this 2-core machine serves
// with the servers on it too); EAGLET_BENCH_SCALE_REQUESTS sets the prompts
// (default 50,000). It reports requests/s, the mean requests in flight
// (requests/s × mean request time, Little's law: 16,384 if the coordinator
// keeps up), CPU per request and the cores it kept busy, the servers'
// cores, peak RSS, and how long an answer waits between arriving and
// being committed (p50, p99, max; to the 50 ms of the progress ticks that
// observe the commits). The whole run includes dialling 16,384
// connections and growing as many goroutines' stacks, once each, and the
// tail; the steady-* figures are those of the middle half of the answers
// alone, by arrival (requests/s, mean in flight over that stretch, CPU per
// request):
//
//	go test ./stages/generate -run '^$' -bench ScaleOut -benchtime 1x
func BenchmarkScaleOut(b *testing.B) {
	n := envInt("EAGLET_BENCH_SCALE_REQUESTS", 50_000)
	for _, c := range []struct {
		name  string
		speed int // tokens/s a sequence, for answers of 20 tokens on average
	}{{"answers-20s", 1}, {"answers-4s", 5}} {
		b.Run(c.name, func(b *testing.B) { benchScaleOut(b, n, c.speed) })
	}
}

func benchScaleOut(b *testing.B, n, speed int) {
	urls, child := startScaleServers(b, speed)
	dir := b.TempDir()
	writePrompts(b, filepath.Join(dir, "prompts.jsonl"), n)
	quoted := make([]string, len(urls))
	for i, u := range urls {
		quoted[i] = strconv.Quote(u + "/v1")
	}
	for i := 0; b.Loop(); i++ {
		spec := fmt.Sprintf(`version: 1
name: scale
state: state%d.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {api: openai, urls: [%s], concurrency: %d}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64}}
`, i, strings.Join(quoted, ", "), scaleServers*scalePerServe)
		p, store := enginetest.Open(b, dir, spec)
		enginetest.Run(b, p, store, enginetest.Stage(b, p, "load", ""))
		commits := &commitLog{}
		cpu0, start := rusage.CPU(), time.Now()
		servers0, err := rusage.Of(child)
		if err != nil {
			b.Fatal(err)
		}
		_, err = p.Run(context.Background(), store, engine.RunOptions{
			Nodes: enginetest.Stage(b, p, "generate", ""), Log: commits, ProgressEvery: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		took, cpu := time.Since(start), rusage.CPU()-cpu0
		servers, err := rusage.Of(child)
		if err != nil {
			b.Fatal(err)
		}
		sent, done, meanMs := answerTimes(b, filepath.Join(dir, fmt.Sprintf("state%d.db", i)))
		if len(done) != n {
			b.Fatalf("%d answers stored, want %d", len(done), n)
		}
		rate := float64(n) / took.Seconds()
		b.ReportMetric(rate, "requests/s")
		b.ReportMetric(rate*meanMs/1000, "mean-in-flight")
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-us/request")
		b.ReportMetric(cpu.Seconds()/took.Seconds(), "cores")
		b.ReportMetric((servers-servers0).Seconds()/took.Seconds(), "servers-cores")
		lags := commits.lags(done)
		b.ReportMetric(float64(lags[len(lags)/2]), "commit-p50-ms")
		b.ReportMetric(float64(lags[len(lags)*99/100]), "commit-p99-ms")
		b.ReportMetric(float64(lags[len(lags)-1]), "commit-max-ms")
		// The middle half of the answers, by when they arrived.
		from, to := done[n/4], done[n*3/4]
		if cpu, ok := commits.cpuBetween(from, to); ok {
			answers, seconds := n*3/4-n/4, float64(to-from)/1000
			b.ReportMetric(float64(answers)/seconds, "steady-requests/s")
			b.ReportMetric(inFlight(sent, done, from, to), "steady-in-flight")
			b.ReportMetric(float64(cpu.Microseconds())/float64(answers), "steady-cpu-us/request")
			b.ReportMetric(cpu.Seconds()/seconds, "steady-cores")
		}
	}
	b.ReportMetric(enginetest.PeakRSSMiB(), "peak-MiB")
}

// TestScaleOutServers is BenchmarkScaleOut's child process, not a test:
// it serves the simulated servers and prints their URLs until its stdin
// closes.
func TestScaleOutServers(t *testing.T) {
	if os.Getenv("EAGLET_SCALE_CHILD") == "" {
		t.Skip("run by BenchmarkScaleOut")
	}
	speed := float64(envInt("EAGLET_SCALE_SPEED", 1))
	for range scaleServers {
		srv, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20}), Speed: speed})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		defer hs.Close()
		defer srv.Close()
		fmt.Println("URL", hs.URL)
	}
	fmt.Println("READY")
	io.Copy(io.Discard, os.Stdin)
}

// startScaleServers starts the child process with servers decoding speed
// tokens/s a sequence and returns their URLs and its pid.
func startScaleServers(b *testing.B, speed int) (urls []string, pid int) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestScaleOutServers$", "-test.v")
	cmd.Env = append(os.Environ(), "EAGLET_SCALE_CHILD=1", fmt.Sprintf("EAGLET_SCALE_SPEED=%d", speed))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "READY" {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			urls = append(urls, u)
		}
	}
	go io.Copy(io.Discard, out)
	if len(urls) != scaleServers {
		b.Fatalf("child process started %d servers, want %d", len(urls), scaleServers)
	}
	return urls, cmd.Process.Pid
}

// commitLog reads the progress lines of a run: the count they show is of
// committed outcomes, so it says when each was committed, and with the
// process's CPU time at each line, what a stretch of the run cost.
type commitLog struct {
	mu    sync.Mutex
	times []int64 // Unix ms
	count []int
	cpu   []time.Duration
}

var progressCount = regexp.MustCompile(`generate\[d\]: (\d+)/`)

func (c *commitLog) Write(p []byte) (int, error) {
	now := time.Now().UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range progressCount.FindAllSubmatch(p, -1) {
		if k, err := strconv.Atoi(string(m[1])); err == nil {
			c.times, c.count, c.cpu = append(c.times, now), append(c.count, k), append(c.cpu, rusage.CPU())
		}
	}
	return len(p), nil
}

// lags returns, sorted, how long the k-th answer to arrive waited for the
// progress tick that first counted k commits. Commits follow arrivals in
// order, so the k-th commit is the k-th answer's; answers committed after
// the last tick (at the run's end) are left out.
func (c *commitLog) lags(done []int64) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lags []int64
	j := 0
	for k, d := range done {
		for j < len(c.count) && c.count[j] < k+1 {
			j++
		}
		if j == len(c.count) {
			break
		}
		lags = append(lags, c.times[j]-d)
	}
	if len(lags) == 0 {
		return []int64{0}
	}
	slices.Sort(lags)
	return lags
}

// cpuBetween is the process's CPU time between the first progress lines
// at or after from and to (Unix ms); false when the lines do not span them.
func (c *commitLog) cpuBetween(from, to int64) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.times, func(t int64) bool { return t >= from })
	j := slices.IndexFunc(c.times, func(t int64) bool { return t >= to })
	if i < 0 || j <= i {
		return 0, false
	}
	return c.cpu[j] - c.cpu[i], true
}

// inFlight is the mean number of requests in flight between from and to
// (Unix ms), from when each was sent and answered.
func inFlight(sent, done []int64, from, to int64) float64 {
	var busy int64
	for i := range sent {
		if s, d := max(sent[i], from), min(done[i], to); d > s {
			busy += d - s
		}
	}
	return float64(busy) / float64(to-from)
}

// answerTimes reads when each stored answer was sent and arrived (Unix
// ms, sorted by arrival) and the mean time its request took.
func answerTimes(b *testing.B, path string) (sent, done []int64, meanMs float64) {
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT sent_ms, done_ms FROM items WHERE done_ms > 0 ORDER BY done_ms`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var sum float64
	for rows.Next() {
		var s, d int64
		if err := rows.Scan(&s, &d); err != nil {
			b.Fatal(err)
		}
		sent, done = append(sent, s), append(done, d)
		sum += float64(d - s)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return sent, done, sum / float64(max(len(done), 1))
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
