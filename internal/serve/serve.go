// Package serve starts the inference servers an endpoint launches instead
// of naming by URL, waits until they answer, and stops them: replicas on
// this machine, each from the same argv with its own port and share of the
// GPUs, or jobs on a scheduler (Slurm, Kubernetes, Ray) that one command
// submits and another cancels. Its probes say whether a server is ready
// and whether it still generates, for a watchdog to use.
package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"
)

// Config is one endpoint's launch.
type Config struct {
	// Name is the endpoint's, in log file names and messages ("target").
	Name string
	API  API
	// Options is the endpoint's `launch:` mapping, and Written the
	// mapping as the spec wrote it (nil: Options built in Go).
	Options Options
	Written *yaml.Node
	// LogDir holds a log per replica and the address files jobs write;
	// beside the store, so it is on the shared filesystem a job sees.
	LogDir string
	// Dir is the commands' working directory ("": eaglet's).
	Dir string
	// Environ is the commands' environment (nil: eaglet's own). Its
	// CUDA_VISIBLE_DEVICES is what replicas share when Options.GPUs is
	// empty.
	Environ []string
	// APIKey, when the servers require one, is sent by the probes.
	APIKey string
	// Logf reports each replica's start, readiness and stop (nil: silent).
	Logf func(format string, args ...any)
	// Adopt are the replicas an earlier run recorded (Recorded) that may
	// still be up: Start takes over each that answers instead of starting
	// it, and stops the others before starting them afresh.
	Adopt []Record
	// Recorded, when set, hears of each replica that may outlive eaglet (a
	// job, a kept server) once it is started or submitted, and again when
	// a job answers; Forget of each one stopped, by index.
	Recorded func(Record)
	Forget   func(replica int)
	// Redact scrubs secrets (a ${VAR} from the environment) from the
	// command lines eaglet writes into the logs (nil: written as they are).
	Redact func(string) string
}

// Group is an endpoint's running replicas.
type Group struct {
	*endpoint
	// mu guards replicas, which Restart changes, and stopped.
	mu       sync.Mutex
	replicas []*Replica
	// stopped is set once Stop began: a replica a restart brings up
	// after it is stopped at once.
	stopped bool
	// life ends when the group is stopped, cutting a restart's wait short.
	life    context.Context
	endLife context.CancelFunc
	// unwatch stops the stop that the start context's end would trigger.
	unwatch func() bool
}

// Start launches every replica at once and returns when all of them
// answer. If one fails (its process exits, its job reports no address, it
// does not answer within ready_timeout), the others are stopped and the
// error lists each failure, a *StartError with the last lines of its log.
//
// The servers live as long as ctx, as a command of exec.CommandContext
// does: when it ends (Ctrl-C), they are stopped, unless Options.Keep
// leaves them up. Close stops them when the endpoint is done with them.
func Start(ctx context.Context, cfg Config) (*Group, error) {
	if !cfg.API.valid() {
		return nil, fmt.Errorf("launch %s: api %q cannot be launched: want %s or %s", cfg.Name, cfg.API, SGLang, OpenAI)
	}
	if cfg.Name == "" {
		cfg.Name = "server"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s, err := cfg.Options.resolve(cfg.Written)
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
	}
	g := &Group{endpoint: &endpoint{cfg: cfg, s: s, environ: cfg.Environ}}
	g.life, g.endLife = context.WithCancel(context.WithoutCancel(ctx))
	if g.environ == nil {
		g.environ = os.Environ()
	}
	shares := make([]Devices, s.Replicas)
	ports := make([]int, s.Replicas)
	if !s.scheduled() {
		if shares, err = s.shares(g.environ); err != nil {
			return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
		}
		if ports, err = freePorts(s.Replicas); err != nil {
			return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
		}
	}
	// Absolute, as a job on another node and a command in Dir need it.
	if g.cfg.LogDir, err = filepath.Abs(cfg.LogDir); err != nil {
		return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
	}
	if err := os.MkdirAll(g.cfg.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
	}
	for i := range s.Replicas {
		g.replicas = append(g.replicas, &Replica{Index: i, GPUs: shares[i], e: g.endpoint,
			Server: Server{API: cfg.API, APIKey: cfg.APIKey}})
	}

	// The first failure cancels the other starts: the group is of no use,
	// and their GPUs are better freed at once than after a long load.
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(g.replicas))
	var wg sync.WaitGroup
	for i, r := range g.replicas {
		wg.Go(func() {
			if rec, ok := adoptable(cfg.Adopt, i); ok && r.adopt(startCtx, rec) {
				return
			}
			if errs[i] = r.start(startCtx, ports[i]); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var failed *multierror.Error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			failed = multierror.Append(failed, err)
		}
	}
	if failed == nil && ctx.Err() != nil {
		failed = multierror.Append(failed, fmt.Errorf("launch %s: %w", cfg.Name, ctx.Err()))
	}
	if failed != nil {
		failed.ErrorFormat = listed("replicas failed")
		if err := g.Stop(); err != nil {
			failed = multierror.Append(failed, err)
		}
		return nil, failed
	}
	if !s.Keep {
		g.unwatch = context.AfterFunc(ctx, func() { g.Stop() })
	}
	return g, nil
}

// adoptable is the record of replica i among recs.
func adoptable(recs []Record, i int) (Record, bool) {
	for _, rec := range recs {
		if rec.Replica == i {
			return rec, true
		}
	}
	return Record{}, false
}

// Replicas are the group's replicas, by index.
func (g *Group) Replicas() []*Replica {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.replicas)
}

// URLs are the replicas' API base URLs, by index.
func (g *Group) URLs() []string {
	urls := make([]string, 0, len(g.replicas))
	for _, r := range g.Replicas() {
		urls = append(urls, r.URL)
	}
	return urls
}

// Close ends the endpoint's use of its servers: it stops them, or leaves
// them up when the options keep them.
func (g *Group) Close() error {
	if g.s.Keep {
		return nil
	}
	g.unwatch()
	return g.Stop()
}

// Stop stops every replica, kept or not, and waits until they are gone;
// a restart under way is cut short and its server stopped too.
func (g *Group) Stop() error {
	g.mu.Lock()
	g.stopped = true
	replicas := slices.Clone(g.replicas)
	g.mu.Unlock()
	g.endLife()
	errs := make([]error, len(replicas))
	var wg sync.WaitGroup
	for i, r := range replicas {
		wg.Go(func() { errs[i] = r.Stop() })
	}
	wg.Wait()
	var all *multierror.Error
	for _, err := range errs {
		if err != nil {
			all = multierror.Append(all, err)
		}
	}
	if all != nil {
		all.ErrorFormat = listed("replicas failed to stop")
	}
	return all.ErrorOrNil()
}
