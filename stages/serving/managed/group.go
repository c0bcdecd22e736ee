package managed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/internal/serve"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

// Rotation is where a group's URLs take requests: the endpoint's pool of
// URLs. The group swaps a restarted replica's URL in for its
// predecessor's, and takes a dead one's out at once.
type Rotation interface {
	Replace(old, url string) bool
	TakeOut(url, cause string)
}

// Group is a launched endpoint's servers over one run. Nothing is started
// until Start: a run that has nothing to send launches nothing.
type Group struct {
	// Rotation gets the replicas' URLs in place of the stand-ins URLs
	// gives before the start; set it before Start.
	Rotation Rotation
	// Down, when set, hears that every replica exited with its restarts
	// spent: the endpoint can serve nothing more in this run.
	Down func(err error)
	// Jobs, when set, keeps a record of each replica that may outlive the
	// run (a job, a kept server), so the next run adopts or cancels it.
	Jobs stages.Checkpoints

	opts *Options
	cfg  serve.Config
	logf func(string, ...any)
	// dir is where the logs and the record of the last launch go.
	dir string

	mu sync.Mutex
	// current is the start under way or done; nil until Start is first
	// called, and again after Close.
	current *start
	sg      *serve.Group
	// end ends the start, the watchers and their restarts.
	end  context.CancelFunc
	urls []string
	// replicas are what the run knows of each replica, by index.
	replicas []*replica
}

// replica is a group's replica over the run, across restarts.
type replica struct {
	// restarts counts the starts after the first, failed ones too.
	restarts int
	// why is what asked for a restart (Restart's cause), for its log line.
	why string
	// up sums the time the replica's earlier servers answered; since is
	// when the current one became ready (zero while none does).
	up    time.Duration
	since time.Time
	lost  bool
}

// uptime is how long the replica's servers have answered over the run.
func (r *replica) uptime() time.Duration {
	if r.since.IsZero() {
		return r.up
	}
	return r.up + time.Since(r.since)
}

// start is one launch of the servers: done is closed once it has ended,
// err then saying how.
type start struct {
	done chan struct{}
	err  error
}

// New prepares endpoint ep's launch, checked as the spec's check does,
// its logs to go to servers/ beside the spec's store; logf (nil: quiet)
// hears of starts, exits, restarts and stops. It starts nothing.
func New(s *specs.Spec, ep *specs.Endpoint, logf func(string, ...any)) (*Group, error) {
	o, err := decode(s, ep)
	if err != nil {
		return nil, err
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	g := &Group{opts: o, logf: logf, dir: logDir(s)}
	g.cfg = serve.Config{Name: ep.Name, API: serve.API(ep.API), Options: o.Options, Written: ep.Launch,
		LogDir: g.dir, Dir: filepath.Dir(s.Path), APIKey: ep.APIKey, Logf: logf, Redact: s.Redact}
	for i := range o.Replicas {
		// Never sent to: Start puts the servers' URLs in their place
		// before the first request goes.
		g.urls = append(g.urls, fmt.Sprintf("http://%s-%d.launching.invalid", ep.Name, i))
		g.replicas = append(g.replicas, &replica{})
	}
	return g, nil
}

// URLs are the replicas' URLs: stand-ins until they have started.
func (g *Group) URLs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.urls...)
}

// Start launches the servers on its first call and waits until every
// replica answers; later calls wait for the same start and return its
// result. ctx bounds only the caller's wait: the servers live until Close.
func (g *Group) Start(ctx context.Context) error {
	g.mu.Lock()
	if g.current == nil {
		g.current = &start{done: make(chan struct{})}
		life, end := context.WithCancel(context.Background())
		g.end = end
		go g.launch(life, g.current)
	}
	st := g.current
	g.mu.Unlock()
	select {
	case <-st.done:
		return st.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// launch starts the servers, puts their URLs in rotation and watches each.
func (g *Group) launch(life context.Context, st *start) {
	began := time.Now()
	o := g.opts
	g.logf("launching %s: %s of %s, logs in %s", g.cfg.Name, human.Plural(o.Replicas, "replica"), filepath.Base(o.Argv[0]), g.dir)
	cfg := g.cfg
	if g.Jobs != nil {
		cfg.Adopt = g.leftovers(life)
		cfg.Recorded, cfg.Forget = g.record, g.forget
	}
	sg, err := serve.Start(life, cfg)
	g.mu.Lock()
	defer g.mu.Unlock()
	defer close(st.done)
	if err != nil {
		st.err = fmt.Errorf("launch %s: %w", g.cfg.Name, err)
		g.logf("%v", st.err)
		return
	}
	g.sg = sg
	urls := sg.URLs()
	for i, r := range sg.Replicas() {
		g.Rotation.Replace(g.urls[i], r.URL)
		g.replicas[i].since = r.ReadyAt
		go g.watch(life, sg, i, r)
	}
	g.urls = urls
	took := time.Since(began)
	g.logf("%s: %s ready in %s at %s", g.cfg.Name, human.Plural(o.Replicas, "replica"), took.Round(time.Millisecond), strings.Join(urls, ", "))
	g.keep(record{StartUpSeconds: took.Seconds()})
}

// watch restarts replica i each time its server's process exits, with
// backoff, until its restarts are spent or the group is closed.
func (g *Group) watch(life context.Context, sg *serve.Group, i int, r *serve.Replica) {
	for {
		select {
		case <-r.Exited():
		case <-life.Done():
			return
		}
		if life.Err() != nil {
			return // stopped by Close
		}
		g.mu.Lock()
		rep := g.replicas[i]
		url, why := g.urls[i], cmp.Or(rep.why, "its process exited")
		rep.why = ""
		if !rep.since.IsZero() {
			rep.up += time.Since(rep.since)
			rep.since = time.Time{}
		}
		n := rep.restarts
		g.mu.Unlock()
		reason := "exit status 0"
		if err := r.ExitErr(); err != nil {
			reason = err.Error()
		}
		g.Rotation.TakeOut(url, fmt.Sprintf("replica %d: %s (%s)", i, why, reason))
		g.logf("%s replica %d at %s: %s (%s)%s", g.cfg.Name, i, url, why, reason, tailLines(r))
		if n >= g.opts.Restarts {
			g.lose(i, fmt.Sprintf("%s replica %d is not restarted: launch.restarts (%d) spent", g.cfg.Name, i, g.opts.Restarts))
			return
		}
		wait := backoff(n)
		g.logf("%s replica %d: restart %d of %d in %s; its requests go to the other replicas meanwhile", g.cfg.Name, i, n+1, g.opts.Restarts, wait)
		select {
		case <-time.After(wait):
		case <-life.Done():
			return
		}
		g.mu.Lock()
		rep.restarts++
		g.mu.Unlock()
		nr, err := sg.Restart(life, i)
		if errors.Is(err, serve.ErrStopped) {
			return
		}
		if err != nil {
			// The replica stays down; the next round counts another restart.
			g.logf("%s replica %d: restart failed: %v", g.cfg.Name, i, err)
			continue
		}
		g.mu.Lock()
		g.urls[i], rep.since = nr.URL, nr.ReadyAt
		g.mu.Unlock()
		g.Rotation.Replace(url, nr.URL)
		g.logf("%s replica %d: restarted, ready in %s at %s", g.cfg.Name, i, nr.ReadyAt.Sub(nr.StartedAt).Round(time.Millisecond), nr.URL)
		r = nr
	}
}

// lose gives up on replica i, and on the endpoint once no replica is left.
func (g *Group) lose(i int, msg string) {
	g.logf("%s", msg)
	g.mu.Lock()
	g.replicas[i].lost = true
	left := 0
	for _, r := range g.replicas {
		if !r.lost {
			left++
		}
	}
	g.mu.Unlock()
	if left == 0 && g.Down != nil {
		g.Down(fmt.Errorf("every replica of %s exited and is not restarted (launch.restarts: %d); see the logs in %s", g.cfg.Name, g.opts.Restarts, g.dir))
	}
}

// Restart restarts the replica serving at url as one whose process exited
// is (out of rotation, then started again with backoff, within the
// restarts), cause saying why in the log: the seam for a watchdog that
// finds a replica hung, answering its health but generating nothing. It
// returns at once, reporting whether url is one of the group's replicas.
func (g *Group) Restart(url, cause string) bool {
	g.mu.Lock()
	if g.sg == nil {
		g.mu.Unlock()
		return false
	}
	for i, u := range g.urls {
		if u != url {
			continue
		}
		g.replicas[i].why = cause
		r := g.sg.Replicas()[i]
		g.mu.Unlock()
		// Its watcher sees the exit and restarts it.
		go r.Stop()
		return true
	}
	g.mu.Unlock()
	return false
}

// Close ends the run's use of the servers: a start under way is cut short,
// the watchers stop restarting, and the servers are stopped unless the
// launch keeps them. A later Start launches them again.
func (g *Group) Close() error {
	g.mu.Lock()
	st, end := g.current, g.end
	g.current = nil
	g.mu.Unlock()
	if st == nil {
		return nil
	}
	end()
	<-st.done
	g.mu.Lock()
	sg, summary := g.sg, g.summary()
	g.sg = nil
	// The run's use of the servers ends here, kept or not.
	for _, r := range g.replicas {
		r.up, r.since = r.uptime(), time.Time{}
	}
	g.mu.Unlock()
	if sg == nil {
		return nil
	}
	err := sg.Close()
	if g.opts.Keep {
		g.logf("%s: %s; left running (launch.keep)", g.cfg.Name, summary)
	} else if err == nil {
		g.logf("%s: stopped; %s", g.cfg.Name, summary)
	}
	return err
}

// summary says what the replicas did over the run: uptime and restarts.
// The caller holds g.mu.
func (g *Group) summary() string {
	var up time.Duration
	restarts := 0
	for _, r := range g.replicas {
		up += r.uptime()
		restarts += r.restarts
	}
	s := fmt.Sprintf("%s up %s in all", human.Plural(len(g.replicas), "replica"), up.Round(time.Second))
	if restarts > 0 {
		s += ", " + human.Plural(restarts, "restart")
	}
	return s
}

// backoff is the wait before a replica's restart n+1: 1 s, 2 s, 4 s, ...
// up to a minute, so a server that dies at once is not started in a loop.
func backoff(n int) time.Duration { return min(time.Second<<n, time.Minute) }

// tailLines renders the last lines of a replica's log for a log line.
func tailLines(r *serve.Replica) string {
	lines := r.LogTail()
	if len(lines) == 0 {
		return ""
	}
	return fmt.Sprintf("; last lines of %s:\n    %s", r.Log, strings.Join(lines, "\n    "))
}
