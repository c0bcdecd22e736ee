package endpoint

import (
	"math"
	"strings"
	"testing"
)

func TestParseLoad(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       serverLoad
		ok         bool
	}{
		{"sglang", `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="Qwen/Qwen3-8B"} 41.0
sglang:num_queue_reqs{model_name="Qwen/Qwen3-8B"} 3.0
sglang:token_usage{model_name="Qwen/Qwen3-8B"} 0.83
sglang:num_retracted_requests_total{model_name="Qwen/Qwen3-8B"} 12.0
sglang:max_total_num_tokens{model_name="Qwen/Qwen3-8B"} 159277.0
sglang:cache_hit_rate{model_name="Qwen/Qwen3-8B"} 0.5
`, serverLoad{running: 41, queued: 3, usage: 0.83, preempted: 12, capacity: 159277}, true},
		{"vllm, two engines, a label with a space", `vllm:num_requests_running{engine="0",model_name="a b"} 10
vllm:num_requests_running{engine="1",model_name="a b"} 12
vllm:num_requests_waiting{engine="0",model_name="a b"} 1 1700000000000
vllm:kv_cache_usage_perc{engine="0",model_name="a b"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="a b"} 0.75
vllm:num_preemptions_total{engine="0",model_name="a b"} 4
`, serverLoad{running: 22, queued: 1, usage: 0.75, preempted: 4}, true},
		{"not an inference server", "go_goroutines 12\n", serverLoad{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := parseLoad(strings.NewReader(tt.text))
			if err != nil || ok != tt.ok || got != tt.want {
				t.Errorf("parseLoad = %+v, %t, %v; want %+v, %t", got, ok, err, tt.want, tt.ok)
			}
		})
	}
}

// TestKVControl: the limit grows while the cache has room, stops under
// running × target / usage, holds back when the server queues, and a
// preemption cuts it and lowers the target.
func TestKVControl(t *testing.T) {
	c := newKVControl()
	limit := 16.0
	limit = c.next(limit, 400, 4, 0, serverLoad{running: 16, usage: 0.1})
	if limit != 20 {
		t.Errorf("filling: limit %v after 4 answers; want 20", limit)
	}
	// 40 running fill 0.8 of the cache: 0.85/0.8 x 40 = 42.5 fit.
	limit = 40
	for range 50 {
		limit = c.next(limit, 400, 10, 0, serverLoad{running: 40, usage: 0.8})
	}
	if want := 40 * c.target / 0.8; math.Abs(limit-want) > 1e-9 || c.target <= startTarget {
		t.Errorf("limit %v, target %v; want the ceiling %v with the target risen", limit, c.target, want)
	}
	if got := c.next(limit, 400, 1, 0, serverLoad{running: 30, queued: 6, usage: 0.7}); got != math.Max(31, limit*0.9) {
		t.Errorf("with the server queueing, limit %v; want it falling toward running+1", got)
	}
	target := c.target
	if got := c.next(40, 400, 1, 0, serverLoad{running: 40, usage: 0.9, preempted: 1}); got != 36 || c.target != target-targetStep {
		t.Errorf("after a preemption: limit %v, target %v; want 36 and %v", got, c.target, target-targetStep)
	}
}

// TestKVControl_RegainsAfterPreemption: a preemption cuts the limit to 0.9
// of what ran; it grows back by one per finished request up to 0.95 of
// that level, then by two a round.
func TestKVControl_RegainsAfterPreemption(t *testing.T) {
	c := newKVControl()
	c.filling = false
	c.next(40, 400, 0, 0, serverLoad{running: 40, usage: 0.5})
	limit := c.next(40, 400, 0, 0, serverLoad{running: 40, usage: 0.5, preempted: 1})
	if limit != 36 {
		t.Fatalf("limit %v after a preemption at 40 running; want 36", limit)
	}
	limit = c.next(limit, 400, 1, 0, serverLoad{running: 36, usage: 0.5, preempted: 1})
	if limit != 37 {
		t.Errorf("limit %v one answer after; want 37", limit)
	}
	limit = c.next(38, 400, 19, 0, serverLoad{running: 38, usage: 0.5, preempted: 1})
	if limit != 39 {
		t.Errorf("limit %v after half a round past 0.95 of 40; want 39", limit)
	}
}
