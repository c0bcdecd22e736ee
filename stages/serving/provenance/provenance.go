// Package provenance asks a server which serving stack it is, once per
// URL: SGLang's /get_server_info (its server arguments and version), else
// vLLM's /version with its /v1/models entry. A drafter must match the stack
// it will serve behind (a quantised target is not the bf16 one), so every
// answer carries what served it.
package provenance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// askTimeout bounds each question: a server that does not answer one is
// described as far as it did, and generation is not held up.
const askTimeout = 5 * time.Second

// maxBody bounds what is read of an answer (a router's /models lists
// hundreds of models).
const maxBody = 4 << 20

// Asker describes the servers behind one endpoint.
type Asker struct {
	client *http.Client
	auth   pool.Auth
	// model is the endpoint's model, to find its entry in /models.
	model string
	mu    sync.Mutex
	byURL map[string]*entry
}

// entry is one URL's description; done is closed once it is known. Those
// who come while it is asked wait on the channel rather than a sync.Once's
// lock, which a test in virtual time (synctest) could not wait out.
type entry struct {
	done chan struct{}
	s    conv.Served
}

// New returns an Asker sending auth with each question.
func New(client *http.Client, auth pool.Auth, model string) *Asker {
	return &Asker{client: client, auth: auth, model: model, byURL: map[string]*entry{}}
}

// Of returns what the server at base (an endpoint URL, with or without
// /v1) says of itself, asking it the first time only.
func (a *Asker) Of(ctx context.Context, base string) conv.Served {
	a.mu.Lock()
	e, asked := a.byURL[base]
	if !asked {
		e = &entry{done: make(chan struct{})}
		a.byURL[base] = e
	}
	a.mu.Unlock()
	if !asked {
		e.s = a.ask(context.WithoutCancel(ctx), base)
		close(e.done)
	}
	<-e.done
	return e.s
}

// Stamp returns answered, what one answer said of its stack (provider,
// weight version), over what the server at base says of itself.
func (a *Asker) Stamp(ctx context.Context, base string, answered *conv.Served) *conv.Served {
	s := a.Of(ctx, base)
	if answered != nil {
		if answered.Provider != "" {
			s.Provider = answered.Provider
		}
		if answered.WeightVersion != "" {
			s.WeightVersion = answered.WeightVersion
		}
	}
	if s == (conv.Served{}) {
		return nil
	}
	return &s
}

// serverInfo is what eaglet reads of SGLang's /get_server_info: its
// ServerArgs, flattened, and "version".
type serverInfo struct {
	Version       string  `json:"version"`
	ModelPath     string  `json:"model_path"`
	Quantization  *string `json:"quantization"`
	DType         string  `json:"dtype"`
	KVCacheDType  string  `json:"kv_cache_dtype"`
	TPSize        int     `json:"tp_size"`
	WeightVersion *string `json:"weight_version"`
}

func (a *Asker) ask(ctx context.Context, base string) conv.Served {
	root := strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
	var info serverInfo
	if a.get(ctx, root+"/get_server_info", &info) == nil && (info.Version != "" || info.ModelPath != "") {
		s := conv.Served{Server: strings.TrimSpace("sglang " + info.Version), Model: info.ModelPath,
			DType: info.DType, KVCacheDType: info.KVCacheDType, TPSize: info.TPSize}
		if info.Quantization != nil {
			s.Quantization = *info.Quantization
		}
		if info.WeightVersion != nil {
			s.WeightVersion = *info.WeightVersion
		}
		return s
	}
	var s conv.Served
	var version struct {
		Version string `json:"version"`
	}
	if a.get(ctx, root+"/version", &version) == nil && version.Version != "" {
		s.Server = "vllm " + version.Version
	}
	var models struct {
		Data []struct {
			ID   string `json:"id"`
			Root string `json:"root"`
		} `json:"data"`
	}
	if s.Server != "" && a.get(ctx, root+"/v1/models", &models) == nil {
		for _, m := range models.Data {
			if m.ID == a.model || len(models.Data) == 1 {
				s.Model = m.ID
				if m.Root != "" {
					s.Model = m.Root
				}
			}
		}
	}
	return s
}

// get decodes the JSON answer to a GET of url into v.
func (a *Asker) get(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for k, val := range a.auth.Headers {
		req.Header.Set(k, val)
	}
	if a.auth.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+a.auth.APIKey)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		return fmt.Errorf("%s: http %d", url, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(v)
}
