package endpoint

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/openai"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// A server that is down makes every attempt fail; once the run is told to
// stop, the record must be given up at once (left for the next run), not
// after its remaining retries and their backoff.
func TestAsk_StopEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// In the bubble, the client is one of the test's own: the pools'
		// shared one keeps connections a bubble must not touch.
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		urls := []string{"http://127.0.0.1:1/v1"}
		p, err := pool.New(pool.Config{URLs: urls, Client: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := openai.New(openai.Config{URLs: urls, Model: "m", Pool: p})
		if err != nil {
			t.Fatal(err)
		}
		cl := &Client{Endpoint: &Endpoint{Spec: &specs.Endpoint{Name: "down"}, be: c, lim: newLimiter(4, 4, false)},
			Retries: 50, Timeout: time.Second, Instance: "generate[d]", Share: 1}
		stop := make(chan struct{})
		ctx := stages.WithStop(context.Background(), stop)
		time.AfterFunc(300*time.Millisecond, func() { close(stop) })
		start := time.Now()
		_, err = cl.Ask(ctx, &backend.Request{Messages: []conv.Message{{Role: conv.User, Content: "hi"}}, MaxTokens: 8}, &Tally{})
		if !errors.Is(err, stages.ErrInterrupted) {
			t.Fatalf("ask returned %v; want ErrInterrupted", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("gave up %s after the stop; want at once", took)
		}
	})
}

// movingBackend moves its first request off a hung URL, as the pool's
// watch does, and answers the next.
type movingBackend struct{ calls int }

func (b *movingBackend) Generate(ctx context.Context, req *backend.Request) (*conv.Generation, error) {
	if b.calls++; b.calls == 1 {
		return nil, &backend.Error{Kind: backend.Retryable, Moved: true, Msg: "url hung: http://a out of service (no token in 10s)"}
	}
	return &conv.Generation{Content: "hi"}, nil
}

// A request moved off a hung URL is sent again at once and costs the
// record no attempt, even with no retries left; it counts as sent, and as
// a retry of its kind.
func TestAsk_MovedIsNoAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		be := &movingBackend{}
		cl := &Client{Endpoint: &Endpoint{Spec: &specs.Endpoint{Name: "e"}, be: be, lim: newLimiter(4, 4, false)},
			Retries: 0, Timeout: time.Minute, Instance: "generate[d]", Share: 1}
		var tl Tally
		start := time.Now()
		if _, err := cl.Ask(context.Background(), &backend.Request{MaxTokens: 8}, &tl); err != nil {
			t.Fatalf("ask: %v; want the request answered on its second sending", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("sent again after %s; want at once", took)
		}
		if tl.Requests != 2 || len(tl.Retries) != 1 || tl.Retries["url hung"] != 1 {
			t.Errorf("tally %+v; want 2 requests, 1 retry 'url hung'", tl)
		}
	})
}
