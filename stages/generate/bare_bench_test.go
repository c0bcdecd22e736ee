package generate_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/rusage"
)

// bareRun is what bareClient measured.
type bareRun struct {
	requests   int
	seconds    float64
	cpuSeconds float64
}

func (r bareRun) rate() float64 { return float64(r.requests) / r.seconds }

func (r bareRun) cpuPerRequest() float64 { return r.cpuSeconds * 1e6 / float64(r.requests) }

// bareClient is the ceiling of the request-rate benchmark: the Python
// baseline's loop written in Go with net/http and nothing of eaglet (no
// store, no checkpoint, no budget, no retries, no parsing), 1,000
// goroutines sending the same bodies on mode's path ("openai",
// "openai-stream", "sglang", "sglang-stream") and appending each answer,
// unparsed, to a JSONL file. Its rate over the Python client's bounds what
// a client built on net/http reaches on this machine and server.
func bareClient(b *testing.B, base string, n int, mode, out string) bareRun {
	b.Helper()
	stream := strings.HasSuffix(mode, "-stream")
	sglang := strings.HasPrefix(mode, "sglang")
	url := base + "/v1/chat/completions"
	if sglang {
		url = base + "/generate"
	}
	body := func(i int) []byte {
		prompt := fmt.Sprintf("Question number %d: explain idea %d in detail.", i, i*7)
		var v any
		if sglang {
			v = map[string]any{"text": prompt, "sampling_params": map[string]any{"max_new_tokens": 256}, "stream": stream}
		} else {
			m := map[string]any{"model": "sim", "max_tokens": 256, "messages": []map[string]string{{"role": "user", "content": prompt}}}
			if stream {
				m["stream"], m["stream_options"] = true, map[string]any{"include_usage": true}
			}
			v = m
		}
		data, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	f, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1100}}
	defer client.CloseIdleConnections()

	var (
		mu     sync.Mutex
		done   int
		failed error
	)
	work := make(chan int)
	var wg sync.WaitGroup
	cpu0, start := rusage.CPU(), time.Now()
	for range 1000 {
		wg.Go(func() {
			for i := range work {
				answer, err := bareAsk(client, url, body(i))
				mu.Lock()
				if err != nil {
					failed = err
				} else {
					fmt.Fprintf(w, "{\"i\":%d,\"answer\":%q}\n", i, answer)
					done++
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	run := bareRun{requests: done, seconds: time.Since(start).Seconds(), cpuSeconds: (rusage.CPU() - cpu0).Seconds()}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if failed != nil || done != n {
		b.Fatalf("bare client answered %d of %d requests: %v", done, n, failed)
	}
	return run
}

// bareAsk posts one request and returns its body unparsed, whole or
// streamed: less work than any client that reads what it got.
func bareAsk(client *http.Client, url string, body []byte) ([]byte, error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", url, resp.Status)
	}
	return answer, err
}
