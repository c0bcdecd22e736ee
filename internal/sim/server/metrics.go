package server

import (
	"fmt"
	"net/http"
	"strings"
)

// metrics serves GET /metrics in Prometheus' text format with the names
// SGLang exports (python/sglang/srt/metrics/collector.py), so a client that
// reads a real server's load reads the simulator's the same way; with a
// drafter, vLLM's speculative-decoding counters follow.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	st := s.Stats()
	usage := 0.0
	if s.cfg.KVTokens > 0 {
		usage = float64(st.KVUsed) / float64(s.cfg.KVTokens)
	}
	var b strings.Builder
	label := fmt.Sprintf("{model_name=%q}", s.cfg.Name)
	metric := func(name, typ, help string, v float64) {
		fmt.Fprintf(&b, "# HELP sglang:%s %s\n# TYPE sglang:%s %s\nsglang:%s%s %g\n", name, help, name, typ, name, label, v)
	}
	metric("num_running_reqs", "gauge", "The number of running requests.", float64(st.Running))
	metric("num_queue_reqs", "gauge", "The number of requests in the waiting queue.", float64(st.Queued))
	metric("num_used_tokens", "gauge", "The number of used tokens.", float64(st.KVUsed))
	metric("token_usage", "gauge", "The token usage.", usage)
	metric("max_total_num_tokens", "gauge", "Maximum total number of tokens in the KV cache pool.", float64(s.cfg.KVTokens))
	metric("new_token_ratio", "gauge", "The new token ratio.", st.NewTokenRatio)
	metric("num_retracted_requests_total", "counter", "Total number of retracted requests.", float64(st.Retractions))
	metric("generation_tokens_total", "counter", "Number of generation tokens processed.", float64(st.CompletionTokens))
	s.spec.write(&b, s.cfg.Name)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(b.String()))
}
