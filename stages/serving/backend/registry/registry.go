// Package registry keeps the inference APIs by name. Each backend package
// registers its API in its init (name, options type, whether it needs URLs,
// constructor), so adding an API touches neither the spec checks nor the
// generate stage: one package plus one blank import in
// stages/serving/backends.go.
package registry

import (
	"fmt"
	"sync"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// API describes an inference API whose endpoint options decode into O.
type API[O any] struct {
	// Name is what an endpoint's `api:` says.
	Name string
	// Summary says in a line what the API is, for `eaglet kinds`.
	Summary string
	// NeedsURLs is set for an API served over HTTP.
	NeedsURLs bool
	// New builds the endpoint's client from its server (URLs, key,
	// headers, model and the pool it shares) and decoded options, with the
	// defaults O's `default` tags declare filled in for the keys the
	// endpoint's `options:` leave out.
	New func(srv pool.Server, o *O) (*Client, error)
}

// Client is an endpoint's backend with what the generate stage needs to
// know about it.
type Client struct {
	backend.Backend
	// Identity is what decides answers: API, model and model settings.
	Identity string
	// MeanTokens is the expected answer length when a dataset gives none
	// (0: the stage's default).
	MeanTokens int
	// TakesIDs is set when the API takes token ids rather than messages
	// (SGLang's /generate, /v1/completions).
	TakesIDs bool
	// Kwargs are the chat_template_kwargs the client sends with every chat
	// request.
	Kwargs map[string]any
	// ProbePath is where a request tells whether a server is in service
	// ("": the API has no server to probe).
	ProbePath string
	// Streams is set when answers stream.
	Streams bool
	// Metrics is the endpoint's `metrics` option: a Prometheus URL for
	// concurrency: auto, "off", or "" for the servers' own /metrics.
	Metrics string
}

// build decodes an endpoint's options and calls its API's constructor.
type build func(spec *specs.Spec, ep *specs.Endpoint, srv pool.Server) (*Client, error)

var (
	mu     sync.RWMutex
	builds = map[string]build{}
)

// Register makes an API available to endpoints, and known to spec checks,
// by name; it panics on a duplicate name, as database/sql.Register does.
func Register[O any](a API[O]) {
	if a.Name == "" || a.New == nil {
		panic("registry: Register needs Name and New")
	}
	specs.CheckOptions[O]()
	specs.RegisterAPI(specs.API{Name: a.Name, Summary: a.Summary, NeedsURLs: a.NeedsURLs, Options: func() any { return new(O) }})
	mu.Lock()
	defer mu.Unlock()
	builds[a.Name] = func(spec *specs.Spec, ep *specs.Endpoint, srv pool.Server) (*Client, error) {
		o := new(O)
		if err := spec.Decode(ep.Options, o); err != nil {
			return nil, err
		}
		c, err := a.New(srv, specs.WithDefaults(o, ep.Options))
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", ep.Name, err)
		}
		return c, nil
	}
}

// New builds the client of endpoint ep of spec, talking to srv.
func New(spec *specs.Spec, ep *specs.Endpoint, srv pool.Server) (*Client, error) {
	mu.RLock()
	b, ok := builds[ep.API]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("endpoint %s: api %q is not supported", ep.Name, ep.API)
	}
	return b(spec, ep, srv)
}

// ServerOptions are the options every API served over HTTP takes, embedded
// in its Options with `yaml:",inline"`.
type ServerOptions struct {
	// Stream asks for answers as they are made.
	Stream bool `yaml:"stream" doc:"stream answers, so the budget sees running answers grow"`
	// StopTokenIDs are ids the model stops on beyond those its files name.
	StopTokenIDs []int `yaml:"stop_token_ids" doc:"ids the model stops on beyond its files' (eos_token, generation_config.json, the template's end-of-turn), trimmed from a stopped answer's ids"`
	// ThinkStart and ThinkEnd delimit reasoning written inline.
	ThinkStart string `yaml:"think_start" default:"<think>" doc:"opens reasoning written inline in the answer"`
	ThinkEnd   string `yaml:"think_end" default:"</think>" doc:"closes it"`
	// Metrics is the server's Prometheus URL for concurrency: auto
	// ("": /metrics at the server root, when it answers; off: none).
	Metrics string `yaml:"metrics" doc:"Prometheus URL for concurrency: auto; left out: /metrics at the server root when it answers; off: none"`
}

// Server returns srv with what these options say of its answers: the stop
// ids to trim and the reasoning tags.
func (o ServerOptions) Server(srv pool.Server) pool.Server {
	srv.StopTokenIDs, srv.ThinkStart, srv.ThinkEnd = o.StopTokenIDs, o.ThinkStart, o.ThinkEnd
	return srv
}
