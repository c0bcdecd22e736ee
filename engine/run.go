package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// RunOptions says what to run and where to report.
type RunOptions struct {
	// Nodes limits the run to these instances (nil: all). Their needs must
	// be up to date or are run first.
	Nodes []*Node
	// Force reruns these instances from scratch even when up to date.
	Force map[*Node]bool
	// Log receives progress and events; secrets are scrubbed.
	Log io.Writer
	// Live redraws progress in place (a terminal) instead of printing lines.
	Live bool
	// ProgressEvery is how often progress is reported (default 10s, 1s live).
	ProgressEvery time.Duration
	// Dry does the run's cheap, local part (loads, caps, filters, merges
	// without their files, answers found again) and stops short of what
	// costs requests (stages.Costly), counting it instead: plan runs this
	// on a copy of the store, so it decides exactly as the run does.
	Dry bool
	// AllowPartial lets a stage that writes a file run although records
	// upstream failed; by default it waits, so a server outage never
	// replaces a good training file with a smaller one.
	AllowPartial bool
	// Now is the clock stages read for today's date (nil: the wall clock).
	Now func() time.Time
}

// Outcome is what became of an instance in a run.
type Outcome int

// Outcomes. UpToDate: the instance had nothing to do, or only records a
// spent budget skips again. Ran: it did its work. WouldRun: in a dry run,
// what is left costs requests, which it counted instead (Result.Pending).
// Errored: it failed, stopped by an error (Result.Err). Blocked: it did
// not start, since what it needs did not finish or has failed records
// (Result.Decision says which). Interrupted: the run was stopped before
// it finished or started it. The zero Outcome is none of these.
const (
	UpToDate Outcome = iota + 1
	Ran
	WouldRun
	Errored
	Blocked
	Interrupted
)

// Result is what happened to one instance in a run.
type Result struct {
	Node *Node
	// Outcome is what became of the instance.
	Outcome Outcome
	// Decision is what the run decided to do with it and why, as plan
	// shows it; Undecided for an instance that failed (Err says why) or
	// was interrupted before it started.
	Decision Decision
	// Processed counts records handled in this run; Failed those that failed.
	Processed int
	Failed    int
	// Reused counts the processed records answered by an earlier outcome
	// of the same content (stages.Costly) instead of being processed.
	Reused int
	// Pending counts, in a dry run, the records a costly stage would send;
	// Shared those whose content another instance of the run asks for.
	Pending, Shared int
	// Requests counts the requests this run sent, retries included;
	// Retries the failures it retried, by kind.
	Requests int
	Retries  map[string]int
	// PromptTokens and CompletionTokens are those of the answers this run
	// got from a server (reused ones excluded), and Dollars what they cost.
	PromptTokens, CompletionTokens int64
	Dollars                        float64
	// Figures are what a batch stage measured of its run (stages.Report),
	// which plan shows beside the estimate when its dry run did the work.
	Figures []string
	// Err is why it failed or was blocked: an *UnfinishedError or a
	// *PartialInputError for the latter.
	Err error
}

// ErrInterrupted is returned when a run stopped early on request.
var ErrInterrupted = errors.New("interrupted")

// Run executes the pipeline against store. Instances start as soon as what
// they need is finished, so datasets never wait for each other. Cancelling
// ctx stops dispatching new work; records already in progress finish and
// are committed before Run returns ErrInterrupted.
func (p *Pipeline) Run(ctx context.Context, store *state.Store, opts RunOptions) ([]*Result, error) {
	nodes := opts.Nodes
	if nodes == nil {
		nodes = p.Nodes
	}
	nodes = p.Ancestors(nodes)
	inRun := map[*Node]bool{}
	for _, n := range nodes {
		inRun[n] = true
	}
	logw := p.Spec.NewRedactWriter(opts.Log)
	prog := newProgress(logw, opts.Live, opts.ProgressEvery, nodes)
	stopProg := prog.start()
	defer stopProg()

	shared := &stages.Shared{Log: prog.line, Clock: opts.Now, Checkpoints: store.RunCheckpoints()}
	r := &runner{p: p, store: store, opts: opts, shared: shared, prog: prog}
	results := make(map[*Node]*Result, len(nodes))
	done := make(map[*Node]chan struct{}, len(nodes))
	for _, n := range nodes {
		done[n] = make(chan struct{})
	}
	if !opts.Dry {
		r.settling = newSettling(p, nodes, done)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[n])
			// Name every unfinished input: the reader fixes them all at once.
			var unfinished []string
			for _, up := range n.Needs {
				if !inRun[up] {
					continue
				}
				<-done[up]
				mu.Lock()
				ur := results[up]
				mu.Unlock()
				if ur.Outcome == Errored || ur.Outcome == Blocked || ur.Outcome == Interrupted {
					unfinished = append(unfinished, up.ID)
				}
			}
			block := r.block(n, unfinished)
			var res *Result
			switch {
			case block != nil:
				res = &Result{Node: n, Outcome: Blocked, Decision: *block, Err: block.Err}
				prog.finish(n, block.String())
			case ctx.Err() != nil:
				res = &Result{Node: n, Outcome: Interrupted}
				prog.finish(n, "not started: interrupted")
			default:
				res = r.runNode(ctx, n)
			}
			mu.Lock()
			results[n] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	// What the run shares ends with it (servers eaglet launched), while
	// the progress log still takes the lines saying so.
	if err := r.shared.Close(); err != nil {
		prog.line("warning: %v", err)
	}
	stopProg()
	// What kinds keep of their own work in batches (a multi-answer
	// record's answers so far) is written before the run says it ended.
	flushErr := store.FlushKept()

	out := make([]*Result, 0, len(nodes))
	var failed []string
	interrupted := false
	for _, n := range nodes {
		res := results[n]
		out = append(out, res)
		switch res.Outcome {
		case Errored:
			failed = append(failed, res.Err.Error())
		case Interrupted:
			interrupted = true
		}
	}
	switch {
	case len(failed) > 0:
		return out, errors.New(p.Spec.Redact(strings.Join(failed, "\n")))
	case interrupted || ctx.Err() != nil:
		return out, ErrInterrupted
	}
	return out, flushErr
}

type runner struct {
	p      *Pipeline
	store  *state.Store
	opts   RunOptions
	shared *stages.Shared
	prog   *progress
	// flights and planned keep a content from being asked for twice in a
	// run (or counted twice in a dry one) by instances running side by side.
	flights flights
	planned planned
	// batches holds the nodes of this run that are batch stages: they
	// store no failed record, so partialInputs need not count theirs
	// (a scan of every row).
	batches sync.Map
	// settling orders, under a budget shared by every dataset, answers
	// found again before new requests (nil in a dry run, which sends none).
	settling *settling
}

func (r *runner) runNode(ctx context.Context, n *Node) *Result {
	upstream := n.Inputs()
	count, err := r.inputCount(upstream)
	if err != nil {
		return r.fail(n, err)
	}
	pr, err := r.p.prepare(n, specs.InputInfo{Records: count}, r.shared, r.prog.logger(n), r.opts.Dry, r.store)
	if err != nil {
		return r.fail(n, err)
	}
	pr.inst.Force = r.opts.Force[n]
	if rel, ok := pr.stage.(stages.Releaser); ok {
		defer rel.Release()
	}
	if x, ok := pr.stage.(stages.Progressor); ok {
		r.prog.watch(n, x)
	}
	var res *Result
	switch st := pr.stage.(type) {
	case stages.Mapper:
		res = r.runMapper(ctx, pr, st, upstream, count)
	case stages.Batch:
		r.batches.Store(n, true)
		res = r.runBatch(ctx, pr, st, upstream, count)
	}
	return res
}

// inputCount counts the live, done records of upstream: as the one
// instance read recorded them when saved done, else by counting them, which
// takes seconds at a million rows.
func (r *runner) inputCount(upstream []string) (int, error) {
	if len(upstream) == 1 {
		up, err := r.store.GetInstance(upstream[0])
		if err != nil {
			return 0, err
		}
		if up != nil && up.Status == state.StatusDone && up.Stats.Records > 0 {
			return up.Stats.Records, nil
		}
	}
	return r.store.CountOutputs(upstream)
}

// fail records that n failed with err, which does not name n: progress and
// the stored state are shown per instance. The result's error names n, and
// for a spec error adds the source line and caret, for the report at the
// end of the run.
func (r *runner) fail(n *Node, err error) *Result {
	msg := r.p.Spec.Redact(err.Error())
	r.prog.fail(n, msg)
	if prev, _ := r.store.GetInstance(n.ID); prev != nil {
		prev.Status, prev.Error = state.StatusFailed, msg
		r.store.PutInstance(prev)
	}
	return &Result{Node: n, Outcome: Errored, Err: &redacted{r.p.Spec.Redact(r.p.instanceError(n, err).Error()), err}}
}

// redacted is an error whose text has the spec's secrets scrubbed. It
// unwraps to its cause, so a caller can still tell what happened (a full
// disk: state.DiskFull); what is printed is the scrubbed text.
type redacted struct {
	msg   string
	cause error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.cause }

// markRunning saves the instance as running under its new fingerprint, so
// status tells a killed run's work apart from work never started and the
// next run finishes what this one began.
func (r *runner) markRunning(pr *prepared, started time.Time, prev *state.Instance) (*state.Instance, error) {
	n := pr.node
	running := &state.Instance{ID: n.ID, Stage: n.Stage.Spec.Name, Fingerprint: pr.fp, Status: state.StatusRunning, StartedAt: started}
	if n.Dataset != nil {
		running.Dataset = n.Dataset.Name
	}
	if prev != nil {
		// The last finish stays until this run's replaces it: answers
		// stored after it may have lost peers in flight (finished), those
		// before it did not, and plan's dry run marks instances running too.
		running.Seconds, running.Stats, running.FinishedAt = prev.Seconds, prev.Stats, prev.FinishedAt
	}
	running.Stats.Config = json.RawMessage(pr.config)
	return running, r.store.PutInstance(running)
}

// saveDone records a finished instance with its output digest.
func (r *runner) saveDone(ctx context.Context, pr *prepared, started time.Time, prev *state.Instance, inputDigest string, stats state.Stats) error {
	digest, records, err := r.store.OutputDigest(ctx, pr.node.ID)
	if err != nil {
		return err
	}
	return r.saveDoneAs(pr, started, prev, inputDigest, digest, records, stats)
}

// saveDoneAs is saveDone with the output digest and records known.
func (r *runner) saveDoneAs(pr *prepared, started time.Time, prev *state.Instance, inputDigest, digest string, records int, stats state.Stats) error {
	stats.Records = records
	in := &state.Instance{ID: pr.node.ID, Stage: pr.node.Stage.Spec.Name, Fingerprint: pr.fp, InputDigest: inputDigest,
		OutputDigest: digest, Status: state.StatusDone, StartedAt: started, FinishedAt: time.Now(), Stats: stats}
	if pr.node.Dataset != nil {
		in.Dataset = pr.node.Dataset.Name
	}
	in.Stats.Config = json.RawMessage(pr.config)
	in.Seconds = time.Since(started).Seconds()
	if prev != nil {
		in.Seconds += prev.Seconds
	}
	return r.store.PutInstance(in)
}

// finishedInputDigest is inputDigest when every need of n is saved done,
// so that its recorded output digest is its output; else "".
func (r *runner) finishedInputDigest(n *Node) (string, error) {
	for _, need := range n.Needs {
		up, err := r.store.GetInstance(need.ID)
		if err != nil || up == nil || up.Status != state.StatusDone {
			return "", err
		}
	}
	return r.inputDigest(n)
}

// inputDigest combines the output digests of a node's needs.
func (r *runner) inputDigest(n *Node) (string, error) {
	h := sha256.New()
	ids := make([]string, len(n.Needs))
	for i, up := range n.Needs {
		ids[i] = up.ID
	}
	sort.Strings(ids)
	for _, id := range ids {
		up, err := r.store.GetInstance(id)
		if err != nil {
			return "", err
		}
		if up == nil {
			return "", fmt.Errorf("%s has not run", id)
		}
		fmt.Fprintf(h, "%s %s\n", id, up.OutputDigest)
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// contentHash hashes what a record says, not where it was read: the same
// conversation moved to another file, line, working directory or dataset
// hashes alike, so its costly outcomes are found again. How the source
// spelt content and arguments is left out too, as in record keys, so
// answers stored before eaglet kept the spelling are found again.
func contentHash(rec *conv.Record) string {
	var j recordJSON
	return j.contentHash(rec)
}

// contentHash is the package's contentHash, marshalling into j.
func (j *recordJSON) contentHash(rec *conv.Record) string {
	c := *rec
	c.Key, c.Dataset, c.Source = "", "", conv.Source{}
	c.Messages = conv.Unspelt(c.Messages)
	data, err := j.marshal(&c)
	if err != nil {
		return ""
	}
	return hashBytes(data)
}

// recordJSON marshals values to the bytes json.Marshal gives, into one
// buffer it reuses, for a caller done with them before the next marshal:
// a batch stage's Emit hashes a record's bytes and the batch writer copies
// them, and a new slice per record (twice, for the content hash) was a
// tenth of a pipeline's allocations.
type recordJSON struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// marshal encodes v; the bytes are valid until the next marshal.
func (j *recordJSON) marshal(v any) ([]byte, error) {
	if j.enc == nil {
		j.enc = json.NewEncoder(&j.buf) // escapes HTML as Marshal does
	}
	j.buf.Reset()
	if err := j.enc.Encode(v); err != nil {
		return nil, err
	}
	b := j.buf.Bytes()
	return b[:len(b)-1], nil // Encode ends a value with a newline
}

func decodeRow(row state.Row) (*conv.Record, error) {
	var rec conv.Record
	if err := json.Unmarshal(row.Data, &rec); err != nil {
		return nil, fmt.Errorf("stored record %s from %s is unreadable: %w", row.Key, row.Origin, err)
	}
	return &rec, nil
}

func tokens(rec *conv.Record) (prompt, completion int) {
	prompt = rec.PromptTokens
	if g := rec.Generation; g != nil {
		completion = max(g.CompletionTokens, g.TotalCompletionTokens)
		if g.PromptTokens > 0 {
			prompt = g.PromptTokens
		}
	}
	return prompt, completion
}
