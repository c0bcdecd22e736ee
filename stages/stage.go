// Package stages defines what a stage kind is and keeps the registry of
// kinds by name. A stage kind is one package under stages/ plus one
// Register call in its init; the engine drives every kind through the small
// interfaces here and knows nothing of what a kind does.
package stages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/specs"
)

// Kind describes a registered stage kind.
type Kind struct {
	Name    string
	Summary string
	// Options returns a pointer to a new options struct that the stage's
	// `with:` mapping is decoded into. specs.Expr fields are expressions
	// of the kind their `eval` tag names (specs.ExprKind): tagged
	// `eval:"predicate"` they are compiled against RecordEnv and evaluated
	// per record by the stage; otherwise the engine evaluates them once per
	// instance (vars, dataset, input) before New. Fields tagged `fp:"-"` do
	// not change results and are left out of the fingerprint.
	Options func() any
	// Check validates options beyond their types (for example that a named
	// endpoint exists), once per stage; nil when there is nothing to check.
	Check func(spec *specs.Spec, st *specs.Stage, opts any) error
	// New builds the stage for one instance.
	New func(inst *Instance) (Stage, error)
}

// Instance is one stage of the DAG applied to one dataset (or to all).
type Instance struct {
	// ID names the instance in logs and state: "generate[B2_code]", or the
	// stage name when the stage does not run per dataset.
	ID    string
	Stage *specs.Stage
	// Dataset is the dataset of a per-dataset instance, else nil.
	Dataset *specs.Dataset
	Spec    *specs.Spec
	// Options is the decoded options struct with instance-level
	// expressions resolved; once New has run, with the defaults of the
	// keys the spec leaves out filled in, as the stage runs with them.
	Options any
	// Siblings are the IDs of every instance of this stage, this one
	// included, for what a stage shares across its instances (a stage-wide
	// budget); kinds never build instance IDs themselves.
	Siblings []string
	// Log writes a line about this instance; secrets are scrubbed.
	Log func(format string, args ...any)
	// Shared holds resources shared by all instances of one run (endpoint
	// clients and their capacity).
	Shared *Shared
	// DryRun is set when the stage is built only to plan.
	DryRun bool
	// ConfigFP fingerprints the instance's configuration (the options
	// that change its output, and its kind's Fingerprint), set once the
	// stage is built: work a kind keeps between runs belongs to it.
	ConfigFP string
	// Force is set, before the stage runs, when the user asked to redo
	// this instance even if up to date (run --force): a kind with work of
	// its own beside its records (handoff's launches) redoes that too.
	Force bool
	// Usage reports what the live outcomes of the given instances have
	// used so far (for budgets that carry over between runs); nil when
	// nothing has run.
	Usage func(ids []string) (Usage, error)
	// Throughput reports the output tokens per second the given
	// instances' answers came at, over the time any was in flight, and
	// how many answers that is; nil when nothing has run.
	Throughput func(ids []string) (tokensPerSecond float64, answers int, err error)
	// Checkpoints keeps work of the kind's own beside its records
	// (handoff's launches); nil when there is no store yet (a plan before
	// any run).
	Checkpoints Checkpoints
	// Results is the results table (evaluate's measurements); nil when
	// there is no store yet.
	Results Results
	// Downstream builds, on first call, the judge of this instance's
	// output by the record stages that take it next (generate's quota
	// counts what the filters after it accept). Those run after this
	// instance, so a quota cannot wait for their counts; judging each
	// answer as they will is the same count, since they decide a record
	// from the record alone. Nil when the engine offers none.
	Downstream func() (*Downstream, error)
}

// Downstream judges records as the chain of record stages (Mappers that
// cost nothing, such as filter) that takes an instance's output for its
// dataset would: a record is accepted when every one of them passes it on.
type Downstream struct {
	// Stages names the instances that judge, in order; empty when nothing
	// after the instance judges records, and then every record is accepted.
	Stages []string
	// Accepts reports whether the chain passes rec on. An error is the
	// error a stage of the chain would fail the record with.
	Accepts func(ctx context.Context, rec *conv.Record) (bool, error)
	// Kept reports how many of the instance's stored outputs (done in
	// earlier runs) the chain accepts, and how many it judged, so a quota
	// resumes where it stopped.
	Kept func(ctx context.Context) (accepted, judged int, err error)
}

// Usage is what stored outcomes have consumed.
type Usage struct {
	Records          int64
	PromptTokens     int64
	CompletionTokens int64
	// Lengths is a sample of the completion lengths, so a budget resumes
	// knowing how long answers run instead of relearning it.
	Lengths []int
	// SupersededRecords, SupersededPromptTokens and
	// SupersededCompletionTokens count the done outcomes no longer live
	// (an option changed since): budgets ignore them; a plan prices the
	// records to redo from them.
	SupersededRecords, SupersededPromptTokens, SupersededCompletionTokens int64
	// Finished, when set, returns the done outcomes (and their completion
	// tokens) whose requests were sent early enough that an answer of
	// longest tokens had finished, at the pace answers ran, when the last
	// one did. A run stopped early (killed, interrupted) loses the answers
	// in flight, the long ones, so the mean of every done outcome runs
	// short; the mean of these does not, whatever the lengths.
	Finished func(longest int) (records, completionTokens int64, err error)
}

// Stage is implemented by exactly one of Mapper and Batch.
type Stage interface{}

// Mapper processes records one at a time, many at once; the engine keeps
// each record's outcome, so a record is never processed twice once its
// outcome is committed, and resumes with the records left.
type Mapper interface {
	// Process handles one record. A nil error with an Outcome is final and
	// stored. An error marks the record failed with the error's message; the
	// next run tries it again. When ctx is cancelled the stage returns
	// ctx.Err() and the record is left for the next run.
	Process(ctx context.Context, rec *conv.Record) (Outcome, error)
}

// Prioritizer is implemented by Mappers that choose the order in which
// records are dispatched: when Prioritize is true, records with a higher
// Priority go first (generate sends the longest expected work first, so the
// run does not end waiting on one long answer).
type Prioritizer interface {
	Prioritize() bool
	Priority(rec *conv.Record) float64
}

// Costly is implemented by Mappers whose work costs money or time (a call
// to an inference server). The engine never does such work twice for the
// same content: before processing a record it looks for a done outcome made
// under the same fingerprint from an input with the same content (moved,
// renamed or reordered; in another dataset; or superseded by an option that
// was since set back) and reuses it, and plan counts that work apart.
// Reuse only replaces the outcome's provenance (key, dataset, source), so a
// Costly stage's output must depend on its input's content alone. Reusable
// records are settled before any is dispatched, so a budget starts knowing
// what they hold; within a run, instances asking for one content share one
// request, each keeping the answer through its own Reuse.
type Costly interface {
	// Reuse decides whether to keep an answer found again for a record:
	// Done keeps out (counted by the stage's budget as if made now),
	// Skipped leaves the record for later (a spent budget). With wait (in
	// a run, among requests in flight) it waits for room as a new request
	// would; without (before dispatch) it decides at once. It must be
	// safe for concurrent use.
	Reuse(ctx context.Context, out *conv.Record, wait bool) (Outcome, error)
}

// Rationed is implemented by a Costly stage whose Reuse may leave an
// answer found again out (a spent budget, a reached target). The engine
// then keeps every answer it can find again before it sends a request, so
// a limit spent on new requests never leaves out an answer already paid
// for; other Costly stages have each record look when it is dispatched.
type Rationed interface {
	Rationed() bool
}

// Starter is implemented by stages whose setup is costly (loading a
// 150k-vocabulary tokenizer takes half a second): New only resolves what
// the fingerprint needs, and the engine calls Start once before the
// instance does any work (in a run, plan's dry run, a downstream judge or
// `eaglet validate`), not when the instance is up to date. An error fails
// the instance, as one from New does.
type Starter interface {
	Start() error
}

// Pure is implemented by Mappers whose outcome for a record depends on the
// record alone and costs less than storing it (filter). The engine runs
// such a stage as one pass over its pending records, in key order, and
// stores the outcomes many to a transaction, instead of dispatching each
// record to a worker and committing a few hundred at a time; outcomes are
// stored as for any Mapper, so a killed pass resumes with the records left.
type Pure interface {
	Pure()
}

// Concurrenter is implemented by Mappers whose natural concurrency is not
// the engine's default (generate takes its endpoint's).
type Concurrenter interface {
	DefaultConcurrency() int
}

// Spender is implemented by stages that pay for their work: Spent is what
// this run has cost so far in dollars (0 when the price is unknown).
type Spender interface {
	Spent() float64
}

// Progressor is implemented by stages with figures of their own to show
// while they run ("budget 412k/1M tokens, $0.83 so far"); called from the
// progress reporter, so it must be cheap and safe for concurrent use.
type Progressor interface {
	Progress() string
}

// Bounded is implemented by a Progressor that may stop before its input is
// done (a budget, a quota): Left is how many more records it expects to finish, or
// -1 while it cannot tell, so the progress line's ETA counts those and not
// every record left.
type Bounded interface {
	Left() int
}

// Batch sees its whole input at once (sampling, merging, loading files).
// Its output replaces the previous output in one transaction.
type Batch interface {
	Run(ctx context.Context, in Input, out Output) error
}

// Status is what became of a record in a stage.
type Status int

// Record statuses, as stored.
const (
	Done    Status = iota // passed on downstream
	Dropped               // removed on purpose (filter, cap); final
	Skipped               // not processed (budget, too long); reconsidered next run
	Failed                // an error; retried next run
)

func (s Status) String() string {
	switch s {
	case Done:
		return "done"
	case Dropped:
		return "dropped"
	case Skipped:
		return "skipped"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// Outcome is the result of processing one record.
type Outcome struct {
	Status Status
	// Reason says why a record was dropped or skipped, in a few words
	// ("keep: finish_reason == 'stop'", ReasonBudget).
	Reason string
	// Record is the output; nil passes the input on unchanged.
	Record *conv.Record
	// Requests counts the requests the outcome took, retries included, and
	// Retries the failures retried, by kind ("http 503"); for status and
	// the end-of-run summary. A stage that sends nothing leaves them zero.
	Requests int
	Retries  map[string]int
}

// Input is a Batch stage's input: the records its needs passed on, in key order.
type Input interface {
	Count() int
	Each(ctx context.Context, fn func(*conv.Record) error) error
}

// CopyInput is implemented by Inputs that can also show every copy of a
// record that several needs hold (the same conversation in two datasets),
// which Each shows once, in key order and then in the order of the needs'
// names; for a stage that chooses between copies (dedupe).
type CopyInput interface {
	EachCopy(ctx context.Context, fn func(*conv.Record) error) error
}

// KeyInput is implemented by Inputs that can show the key and dataset of
// each record alone, as Each would visit them, without reading the
// records; for a stage that chooses by key (cap ranks by a hash of it).
// Within fn, Output.Keep of a record holding the key alone passes the
// whole record on, and that record is what an Orderer's Order sees.
type KeyInput interface {
	EachKey(ctx context.Context, fn func(key, dataset string) error) error
}

// Output receives a Batch stage's results.
type Output interface {
	// Emit stores a new or changed record.
	Emit(rec *conv.Record) error
	// Keep passes an input record on unchanged (stored as a reference).
	Keep(rec *conv.Record) error
	// Drop counts a record not passed on, by reason.
	Drop(reason string)
	// Settle drops, counted under reason, every record of this run's
	// output for which keep returns false: a stage that learns only at the
	// end of its input which records it passes on (cap: the best by rank)
	// keeps each that may stay and settles at the end, reading the input
	// once.
	Settle(keep func(key string) bool, reason string)
}

// Remote is implemented by Batch stages whose Run sends requests to a
// server (evaluate): plan's dry run, which does the run's local part,
// leaves them out and prices their work with their Estimate.
type Remote interface {
	Remote()
}

// Reporter is implemented by Batch stages that tell more of a run than
// their records: what a loader detected and skipped, the files a merge
// wrote. Report is called once the output is committed and again after
// Finish; the engine keeps what it says with the instance.
type Reporter interface {
	Report(r *Report)
}

// Report is what a Reporter tells.
type Report struct {
	// Detected is what a loader found the input to be, and Skipped the bad
	// rows it skipped, by reason.
	Detected string
	Skipped  map[string]int
	// Output is a file the stage wrote, with its stamp (outfile.Stamp), so
	// a deleted or edited output is made again; MoreOutputs are further
	// files, by path.
	Output, OutputHash string
	MoreOutputs        map[string]string
	// Copies counts records passed on more than once, beyond the first.
	Copies int
	// Flagged counts records passed on but marked, by reason, and
	// Examples shows a few dropped or flagged records beside what they
	// matched.
	Flagged  map[string]int
	Examples []Example
	// Figures are lines of what the stage measured (evaluate's
	// acceptance), for status and the summary, and Requests the requests
	// it sent in the run: a Batch stage's are in no record's outcome.
	Figures  []string
	Requests int
}

// ReasonBudget is the Reason of a record skipped because a budget ran out:
// the summary tells the user to raise it.
const ReasonBudget = "budget"

// Example is a dropped or flagged record beside what it matched.
type Example struct {
	Reason string
	// Record and Match name records as DATASET/KEY (file:line), or a
	// benchmark's file and line.
	Record, Match string
	// Similarity is the estimated Jaccard similarity of a near duplicate.
	Similarity float64
	// Text is the matched words (a decontamination n-gram).
	Text string
}

// Orderer is implemented by Batch stages whose output has an order (a
// shuffle): Order gives a record's rank, nonzero and below 2^63.
type Orderer interface {
	Order(rec *conv.Record) uint64
}

// Finisher is implemented by Batch stages that write something outside the
// state store once their output is committed (merge writes its JSONL).
// out iterates the committed output in Order order.
type Finisher interface {
	Finish(ctx context.Context, out Input) error
}

// FileWriter is implemented by the options of kinds that write a file
// outside the state store (merge's out). Validation refuses two stages
// naming one file, where the last to finish would silently replace the
// other's, a file that is the state store or a dataset's source, a file
// outside the spec's directory, and an existing file eaglet did not write
// (see internal/outfile) unless Overwrite is set.
type FileWriter interface {
	// WritesFile returns the option that names the file (for positions in
	// errors), the path as written in the spec, and whether a file eaglet
	// did not write may be replaced.
	WritesFile() (option, path string, overwrite bool)
}

// MoreFilesWriter is implemented by the options of kinds that write files
// beside the one FileWriter names (merge's eval split); each is validated
// as that one is.
type MoreFilesWriter interface {
	WritesMoreFiles() []WrittenFile
}

// WrittenFile is a file a stage writes: the option naming it (a path of
// keys under `with:`, for positions in errors), the path as written in the
// spec, and whether a file eaglet did not write may be replaced.
type WrittenFile struct {
	Option    []string
	Path      string
	Overwrite bool
}

// EndpointUser is implemented by the options of kinds that send requests
// to one of the spec's endpoints (generate), so that status can price their
// tokens without knowing the kind.
type EndpointUser interface {
	EndpointName() string
}

// EndpointsUser is implemented by the options of kinds that send to
// several of the spec's endpoints (evaluate: a server per drafter).
type EndpointsUser interface {
	EndpointNames() []string
}

// SendsTo reports whether a stage with options opts sends to endpoint
// name of spec; an EndpointUser naming none sends to the spec's only
// endpoint.
func SendsTo(spec *specs.Spec, opts any, name string) bool {
	var names []string
	switch o := opts.(type) {
	case EndpointUser:
		names = []string{o.EndpointName()}
	case EndpointsUser:
		names = o.EndpointNames()
	}
	for _, n := range names {
		if n == "" && len(spec.Endpoints) == 1 {
			n = spec.Endpoints[0].Name
		}
		if n == name {
			return true
		}
	}
	return false
}

// Budgeted is implemented by the options of kinds that spend under a
// budget (generate), so that the report can draw what is spent against
// the budget itself without knowing the kind, and the engine can settle
// the answers found again by every instance sharing one budget before any
// of them sends a request.
type Budgeted interface {
	// BudgetLimits returns the budget as the spec states it, nil when
	// there is none.
	BudgetLimits() *BudgetLimits
}

// BudgetLimits are a budget's limits by what they measure
// ("completion_tokens", "total_tokens", "samples", "dollars"), as
// instance-level expressions (evaluated against the instance's input, as
// the kind evaluates them), and whether one budget is shared by every
// instance of the stage rather than each having its own.
type BudgetLimits struct {
	Limits map[string]specs.Expr
	Shared bool
}

// Fingerprinter is implemented by stages whose output depends on more than
// their options: the files a loader reads (path, size, modification time),
// the model behind an endpoint. A change in it reruns the stage.
type Fingerprinter interface {
	Fingerprint() (string, error)
}

// Estimator is implemented by stages that can predict their output for
// `eaglet plan` without doing the work.
type Estimator interface {
	Estimate(in Estimate) (Estimate, error)
}

// Estimate is a prediction of an instance's output and cost.
type Estimate struct {
	Records          int
	PromptTokens     int64
	CompletionTokens int64
	Seconds          float64
	Dollars          float64
	Bytes            int64
	// Exact is set when Records is a count rather than a guess.
	Exact bool
	// Note is a few words on the estimate; plan shows it after the action.
	Note string
	// Pace says where Seconds comes from, PaceMeasured or PaceStated (""
	// without a time), and Rate is the output tokens per second it is at.
	Pace string
	Rate float64
	// ByDataset splits an input by dataset name, for stages that treat
	// datasets differently (merge's weights). The plan sets it on the input
	// it gives Estimate when every upstream instance is per-dataset, else it
	// is nil; the parts carry no ByDataset of their own, and the plan keeps
	// none on a stage's output.
	ByDataset map[string]Estimate
	// Limits are the budgets the work must fit in. The plan cuts the
	// estimate to what they allow rather than the stage, because a budget
	// may be shared by several instances.
	Limits []Limit
	// Sample is a few of the records (the first the source holds), for
	// stages whose work depends on what a record holds: generate answers
	// an MT-Bench record's second question, and with turns: all every
	// assistant turn. Nil when no source was read; stages that pass their
	// input on keep it.
	Sample []*conv.Record
}

// Where an estimate's time comes from: the pace the endpoint's answers
// came at in earlier runs, or the tokens_per_second the spec states.
const (
	PaceMeasured = "measured"
	PaceStated   = "stated"
)

// Limit is a budget as a plan sees it. Instances naming the same Budget
// share what is Left of it in proportion to what each would Need.
type Limit struct {
	// Budget identifies the budget; it must be comparable.
	Budget any
	// Left is what remains of the budget and Need what the work would
	// spend without it, in the budget's unit (tokens, records, dollars).
	// A Left of 0 means the budget admits nothing more.
	Left, Need float64
	// What names the limit for plan ("budget" when empty, "target").
	What string
}

// Releaser is implemented by stages that hold a resource of the run beyond
// their own work (generate, the servers eaglet launched for its
// endpoint): the engine calls Release once the instance is done in the
// run, however it ended, so the last user of such a resource frees it
// before the run ends.
type Releaser interface {
	Release()
}

// Shared is a per-run store of resources shared between instances.
type Shared struct {
	// Log, when set, writes a line about the run rather than one instance
	// (an endpoint's URL going out of service); secrets are scrubbed.
	Log func(format string, args ...any)
	// Clock is the run's clock (nil: the wall clock), settable so tests
	// can move a run to another day.
	Clock func() time.Time
	// Checkpoints keeps what the run records of its own, under no
	// instance (the jobs of launched endpoints); nil without a store.
	Checkpoints Checkpoints
	mu          sync.Mutex
	m           map[string]any
}

// Now returns the run's current time.
func (s *Shared) Now() time.Time {
	if s == nil || s.Clock == nil {
		return time.Now()
	}
	return s.Clock()
}

// Get returns the resource stored under key, making it on first use.
func (s *Shared) Get(key string, make func() (any, error)) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[key]; ok {
		return v, nil
	}
	v, err := make()
	if err != nil {
		return nil, err
	}
	if s.m == nil {
		s.m = map[string]any{}
	}
	s.m[key] = v
	return v, nil
}

// Close closes every resource that is an io.Closer (the servers eaglet
// launched for an endpoint), in the order of their keys, and returns every
// error; the engine calls it when the run ends, however it ends.
func (s *Shared) Close() error {
	s.mu.Lock()
	keys := slices.Sorted(maps.Keys(s.m))
	var closers []io.Closer
	for _, k := range keys {
		if c, ok := s.m[k].(io.Closer); ok {
			closers = append(closers, c)
		}
	}
	s.mu.Unlock()
	var errs *multierror.Error
	for _, c := range closers {
		if err := c.Close(); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	return errs.ErrorOrNil()
}

// Tokenizer returns the model's tokenizer in dir (a resolved path), loaded
// once per run however many stages read it: half a second for a 150k
// vocabulary.
func (s *Shared) Tokenizer(dir string) (*tokenizer.Tokenizer, error) {
	v, err := s.Get("tokenizer:"+dir, func() (any, error) { return tokenizer.Load(dir) })
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", dir, err)
	}
	return v.(*tokenizer.Tokenizer), nil
}

// Define makes the Kind of a stage whose `with:` decodes into O, so that
// its check and constructor take *O and never assert the options' type.
// Its Check refuses what O's tags refuse (a number below its `min`, a
// value outside its `enum`, an empty string), then adds what check finds
// (nil when there is nothing more to check) but what it says of a value
// already refused. The constructor gets a copy
// of the options with the defaults their `default` tags declare filled in
// for the keys the spec leaves out; a key written keeps its value, zero
// included, so check must judge written zeros (specs.WithDefaults gives it
// the values the stage will run with).
func Define[O any](name, summary string, check func(spec *specs.Spec, st *specs.Stage, opts *O) error,
	build func(inst *Instance, opts *O) (Stage, error)) Kind {
	specs.CheckOptions[O]()
	return Kind{Name: name, Summary: summary, Options: func() any { return new(O) },
		Check: func(spec *specs.Spec, st *specs.Stage, opts any) error {
			refused := st.CheckWritten(opts)
			if check == nil {
				return refused
			}
			return besides(refused, check(spec, st, opts.(*O)))
		},
		New: func(inst *Instance) (Stage, error) {
			opts := specs.WithDefaults(inst.Options.(*O), inst.Stage.With)
			inst.Options = opts
			return build(inst, opts)
		}}
}

// besides returns the problems of refused with those of more that are
// not at the position of one of them: a value refused by its tags is
// reported once ("out is empty"), not again by the kind ("needs out").
func besides(refused, more error) error {
	at := map[specs.Pos]bool{}
	errs := multierror.Append(nil, refused)
	for _, err := range errs.Errors {
		var se *specs.Error
		if errors.As(err, &se) {
			at[se.Pos] = true
		}
	}
	for _, err := range multierror.Append(nil, more).Errors {
		var se *specs.Error
		if !errors.As(err, &se) || !at[se.Pos] {
			errs = multierror.Append(errs, err)
		}
	}
	return errs.ErrorOrNil()
}

var (
	regMu sync.RWMutex
	kinds = map[string]Kind{}
)

// Register makes a stage kind available by name; it panics on a duplicate
// name, as database/sql.Register does.
func Register(k Kind) {
	regMu.Lock()
	defer regMu.Unlock()
	if k.Name == "" || k.New == nil || k.Options == nil {
		panic("stages: Register needs Name, Options and New")
	}
	if _, dup := kinds[k.Name]; dup {
		panic("stages: Register called twice for kind " + k.Name)
	}
	kinds[k.Name] = k
}

// Checkpoints keeps what a kind records of its own work beside the
// records the engine stores (a handoff's launch of a command per shard),
// so a killed run redoes only what did not finish: JSON values under keys
// the kind chooses, kept for its instance and forgotten by `eaglet reset`.
type Checkpoints interface {
	// EachCheckpoint calls fn with every value whose key starts with
	// prefix, in key order.
	EachCheckpoint(prefix string, fn func(key string, value []byte) error) error
	// PutCheckpoint stores value under key, replacing what was there.
	PutCheckpoint(key string, value []byte) error
	// KeepLater stores value under key, or forgets key when value is
	// nil, in a batch written within a moment: for what a kill may lose
	// at small cost. Flush writes the batch at once.
	KeepLater(key string, value []byte)
	Flush() error
}

// Results is the results table of what servers reported (the evaluate
// kind's measurements of a drafter): rows under the identity of what was
// measured (drafter, target, sampling, prompt), so nothing is measured
// twice, and reports are functions of the table.
type Results interface {
	// Measured returns the rows stored under ids, by id.
	Measured(ids []string) (map[string]accept.Row, error)
	// Put stores a row measured by stage at a time under id.
	Put(stage, id string, at time.Time, r accept.Row) error
	// Claim makes the rows under ids the stage's evaluation, and only
	// those: rows found again join it, superseded ones leave it.
	Claim(stage string, ids []string) error
}

// Docs lists k's options with their types, defaults and docs.
func (k Kind) Docs() []specs.OptionDoc { return specs.OptionDocs(k.Options()) }

// Lookup returns the kind registered under name.
func Lookup(name string) (Kind, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Names lists the registered kinds, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
