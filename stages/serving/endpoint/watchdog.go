package endpoint

// The watchdog of an endpoint given by URLs: its pool takes out of service
// a URL that refuses or fails its requests, or accepts them and produces
// nothing, moves the requests a hung URL had in flight to the others, and
// probes every URL out of service back with a one-token request (see
// pool/watch.go for the rules and their settings). What the endpoint adds
// is that request, in the endpoint's own API, and the OnDown hook.

import (
	"context"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// watchdog has p, the endpoint's pool (nil: it has none), watch its URLs.
func (e *Endpoint) watchdog(p *pool.Pool) {
	if p == nil {
		return
	}
	p.Watch(pool.Watch{Generates: e.generatesOne, Streams: e.streams, OnDown: func(url string, why error) {
		if e.OnDown != nil {
			e.OnDown(url, why)
		}
	}})
}

// probeRequest asks for one token of any prompt, in messages or token ids
// (id 0, as SGLang's own /health_generate sends), whichever the API takes.
var probeRequest = backend.Request{Key: "eaglet-probe", Messages: []conv.Message{{Role: conv.User, Content: "Hi"}}, InputIDs: []int{0}, MaxTokens: 1}

// generatesOne sends probeRequest to url through the endpoint's backend,
// so it goes the way the endpoint's requests go (route, model, key,
// headers, options) rather than the way a generic probe would guess.
func (e *Endpoint) generatesOne(ctx context.Context, url string) error {
	req := probeRequest
	_, err := e.be.Generate(pool.WithURL(ctx, url), &req)
	return err
}
