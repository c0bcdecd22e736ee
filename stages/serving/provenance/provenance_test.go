package provenance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// TestAsker_DescribesEachServer: each server kind is described from its
// own routes, in the shapes their source gives them: SGLang's
// /get_server_info (ServerArgs flattened, "version"), vLLM's /version and
// /v1/models (root is the checkpoint), and a router with neither (its
// provider comes with each answer). Each URL is asked once.
func TestAsker_DescribesEachServer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		routes   map[string]string
		path     string // the endpoint URL's path
		answered *conv.Served
		want     *conv.Served
	}{
		{"sglang", map[string]string{"/get_server_info": `{"model_path": "/models/Kimi-K2.5", "served_model_name": "kimi",
			"quantization": "fp8", "dtype": "bfloat16", "kv_cache_dtype": "fp8_e4m3", "tp_size": 8, "dp_size": 1,
			"weight_version": "default", "internal_states": [{}], "version": "0.5.3"}`}, "/v1", &conv.Served{WeightVersion: "v2"},
			&conv.Served{Server: "sglang 0.5.3", Model: "/models/Kimi-K2.5", Quantization: "fp8", DType: "bfloat16",
				KVCacheDType: "fp8_e4m3", TPSize: 8, WeightVersion: "v2"}},
		{"sglang native, unquantised", map[string]string{"/get_server_info": `{"model_path": "Qwen/Qwen3-8B", "quantization": null,
			"dtype": "auto", "tp_size": 1, "version": "0.5.3"}`}, "", nil,
			&conv.Served{Server: "sglang 0.5.3", Model: "Qwen/Qwen3-8B", DType: "auto", TPSize: 1}},
		{"vllm", map[string]string{"/version": `{"version": "0.11.0"}`, "/v1/models": `{"object": "list", "data": [
			{"id": "other", "root": "/models/other"}, {"id": "kimi", "object": "model", "root": "/models/Kimi-K2.5", "max_model_len": 131072}]}`},
			"/v1", nil, &conv.Served{Server: "vllm 0.11.0", Model: "/models/Kimi-K2.5"}},
		{"router", nil, "/api/v1", &conv.Served{Provider: "DeepInfra"}, &conv.Served{Provider: "DeepInfra"}},
		{"nothing said", nil, "/v1", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				if r.Header.Get("Authorization") != "Bearer sk-x" {
					t.Errorf("%s asked without the endpoint's key", r.URL.Path)
				}
				body, ok := tc.routes[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				w.Write([]byte(body))
			}))
			defer srv.Close()
			a := New(srv.Client(), pool.Auth{APIKey: "sk-x"}, "kimi")
			got := a.Stamp(context.Background(), srv.URL+tc.path, tc.answered)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			n := asked.Load()
			for range 3 {
				a.Stamp(context.Background(), srv.URL+tc.path, nil)
			}
			if again := asked.Load(); again != n {
				t.Errorf("asked %d more times after the first description", again-n)
			}
		})
	}
}
