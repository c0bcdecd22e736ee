package generate

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

// TargetOptions set a quota of answers accepted downstream: generation
// goes on until the record stages after generate (its filters) accept
// Accepted answers, or the records or the budget run out.
type TargetOptions struct {
	// Accepted is the number of answers to have accepted (an expression).
	Accepted specs.Expr `yaml:"accepted" eval:"int"`
	// EstAcceptance is the share of answers expected to be accepted before
	// any has been judged: plan's estimate and the first dispatches' guess
	// (default 1, which sends no more than the quota until answers say
	// otherwise).
	EstAcceptance *float64 `yaml:"est_acceptance"`
}

// priorWeight is how many judged answers the prior acceptance counts for:
// enough to steady the first few dispatches, little enough that a few
// rounds of real answers outweigh a wrong guess.
const priorWeight = 4

// quota admits records so that the answers accepted downstream reach the
// target without overshooting it by more than what is in flight: a record
// is admitted only while accepted + in_flight × acceptance < target, with
// the acceptance measured on the answers judged so far (this run's and
// earlier runs'). As the target nears, fewer records fit, and once it is
// reached the rest are skipped.
type quota struct {
	mu       sync.Mutex
	changed  *sync.Cond
	target   int
	prior    float64
	accepted int
	judged   int
	inflight int
	// judge and kept come from the engine (stages.Downstream); kept is
	// read once, lazily, so a quota resumes with what earlier runs kept.
	judge  func(ctx context.Context, rec *conv.Record) (bool, error)
	kept   func(ctx context.Context) (accepted, judged int, err error)
	loaded bool
	// judges names the stages that judge, for the progress line.
	judges []string
}

func newQuota(target int, prior float64, d *stages.Downstream) *quota {
	q := &quota{target: target, prior: prior, judge: d.Accepts, kept: d.Kept, judges: d.Stages}
	q.changed = sync.NewCond(&q.mu)
	return q
}

func (q *quota) ensureKept(ctx context.Context) error {
	if q.loaded {
		return nil
	}
	a, j, err := q.kept(ctx)
	if err != nil {
		return fmt.Errorf("quota: judge earlier answers: %w", err)
	}
	q.accepted += a
	q.judged += j
	q.loaded = true
	return nil
}

// rate is the acceptance measured so far, pulled towards the prior while
// few answers are judged.
func (q *quota) rate() float64 {
	return (float64(q.accepted) + priorWeight*q.prior) / (float64(q.judged) + priorWeight)
}

// admit blocks until a record may be sent, and reports false once the
// target is reached (the record is then skipped).
func (q *quota) admit(ctx context.Context) (bool, error) {
	wake := func() {
		q.mu.Lock()
		q.changed.Broadcast()
		q.mu.Unlock()
	}
	stop := context.AfterFunc(ctx, wake)
	defer stop()
	// Records run under a context that Ctrl-C does not cancel; the run's
	// stop signal must wake a waiter too, or it would send once woken.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stages.StopChan(ctx):
			wake()
		case <-done:
		}
	}()
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.ensureKept(ctx); err != nil {
		return false, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if stages.Stopping(ctx) {
			return false, stages.ErrInterrupted
		}
		if q.accepted >= q.target {
			return false, nil
		}
		if float64(q.accepted)+float64(q.inflight)*q.rate() < float64(q.target) {
			q.inflight++
			return true, nil
		}
		q.changed.Wait()
	}
}

// finish frees an admitted record's place: answered says it got an answer
// to judge, accepted that the chain passed it on.
func (q *quota) finish(answered, accepted bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inflight--
	if answered {
		q.count(accepted)
	}
	// Every waiter must see it: a rejection makes room for several, and
	// reaching the target ends them all.
	q.changed.Broadcast()
}

func (q *quota) count(accepted bool) {
	q.judged++
	if accepted {
		q.accepted++
	}
}

// reached reports whether the target is met, so that an answer found
// again is not kept past it.
func (q *quota) reached(ctx context.Context) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.ensureKept(ctx); err != nil {
		return false, err
	}
	return q.accepted >= q.target, nil
}

// countKnown judges and counts an answer found again (which costs nothing
// and was never in flight).
func (q *quota) countKnown(ctx context.Context, rec *conv.Record) {
	ok := q.accepts(ctx, rec)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.count(ok)
	q.changed.Broadcast()
}

// accepts judges an answer as the chain will.
func (q *quota) accepts(ctx context.Context, rec *conv.Record) bool {
	ok, err := q.judge(ctx, rec)
	// A record the chain would fail is not accepted: the filter's own run
	// reports the error.
	return ok && err == nil
}

// String shows the quota's progress: "accepted 412/1000 (41% of 1005 judged)".
func (q *quota) String() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := fmt.Sprintf("accepted %d/%d", q.accepted, q.target)
	if q.judged > 0 {
		s += fmt.Sprintf(" (%.0f%% of %d judged)", 100*float64(q.accepted)/float64(q.judged), q.judged)
	}
	return s
}

// answersLeft is how many more answers, in flight included, the target
// needs at the acceptance measured so far, for the progress line; -1
// before the earlier runs' answers are counted in.
func (q *quota) answersLeft() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	rate := q.rate()
	if !q.loaded || rate <= 0 {
		return -1
	}
	return int(math.Ceil(float64(max(q.target-q.accepted, 0)) / rate))
}

// expected returns how many more answers the target needs at the measured
// (or expected) acceptance, for plan, and that acceptance.
func (q *quota) expected(ctx context.Context) (more int, rate float64, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.ensureKept(ctx); err != nil {
		return 0, 0, err
	}
	rate = q.rate()
	if rate <= 0 {
		return math.MaxInt32, 0, nil
	}
	return int(math.Ceil(float64(max(q.target-q.accepted, 0)) / rate)), rate, nil
}

// targetQuota builds the instance's quota for target o over the chain
// the engine says judges its output.
func targetQuota(inst *stages.Instance, o *TargetOptions) (*quota, error) {
	target := o.Accepted.Int()
	if target < 0 {
		return nil, o.Accepted.Errorf("target accepted evaluates to %d; want 0 or more", target)
	}
	prior := 1.0
	if o.EstAcceptance != nil {
		prior = *o.EstAcceptance
	}
	d := &stages.Downstream{
		Accepts: func(context.Context, *conv.Record) (bool, error) { return true, nil },
		Kept:    func(context.Context) (int, int, error) { return 0, 0, nil },
	}
	if inst.Downstream != nil {
		var err error
		if d, err = inst.Downstream(); err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
	}
	if !inst.DryRun {
		judges := "every answer (no filter follows)"
		if len(d.Stages) > 0 {
			judges = "what " + strings.Join(d.Stages, " then ") + " accepts"
		}
		inst.Log("target: %d accepted, counting %s", target, judges)
	}
	return newQuota(target, prior, d), nil
}

// reasonQuota is the skip reason of records the quota did not need.
const reasonQuota = "target reached"

// estimate cuts plan's input to the answers the quota still needs at the
// measured acceptance (est_acceptance before any answer is judged), and
// says so.
func (q *quota) estimate(in stages.Estimate) (stages.Estimate, string, error) {
	if in.Records == 0 {
		return in, "", nil
	}
	more, rate, err := q.expected(context.Background())
	if err != nil {
		return in, "", err
	}
	note := fmt.Sprintf("target %d accepted: ~%d more answers at %.0f%% acceptance", q.target, more, 100*rate)
	if more == 0 {
		// Reached: like a spent budget, what is left waits for a larger one.
		note = fmt.Sprintf("target %d accepted: reached", q.target)
		in.Limits = append(in.Limits, stages.Limit{Budget: q, Left: 0, Need: 1, What: "target"})
	}
	if more < in.Records {
		f := float64(more) / float64(in.Records)
		in.Records = more
		in.PromptTokens = int64(float64(in.PromptTokens) * f)
		in.Bytes = int64(float64(in.Bytes) * f)
		in.Exact = false
	}
	return in, note, nil
}
