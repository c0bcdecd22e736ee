package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

func init() {
	register(command{
		name:    "run",
		summary: "run the pipeline; resumes where a previous run stopped",
		run:     runRun,
		examples: []example{
			{"run what is not up to date; run it again to resume after a kill", "eaglet run specs/examples/quickstart.yaml"},
			{"ask the server again for one dataset's answers", "eaglet run --stage generate --dataset chat --force specs/examples/quickstart.yaml"},
			{"timestamped progress lines for a log file", "eaglet run --progress lines specs/examples/quickstart.yaml > run.log 2>&1"},
		},
	})
}

func runRun(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "run", "[--stage NAME [--dataset NAME] [--force]] [--allow-partial] [--progress auto|live|lines] [--allow-outside] SPEC",
		"Runs every stage instance that is not up to date. Kill it at any time: the next run\ncontinues from the last commit. Ctrl-C stops dispatching, commits what finished and exits 130.")
	stage := fs.String("stage", "", "run only this stage (and what it needs)")
	dataset := fs.String("dataset", "", "with --stage: only this dataset's instance")
	force := fs.Bool("force", false, "with --stage: redo the stage even if up to date; what depends on it reruns if its output changed")
	progress := fs.String("progress", "auto", "auto, live (redrawn table) or lines (timestamped lines)")
	allowPartial := fs.Bool("allow-partial", false, "write output files even when records upstream failed (by default the previous file is kept)")
	p, err := specFromArgs(env, fs, args)
	if err != nil {
		return err
	}
	if (*dataset != "" || *force) && *stage == "" {
		return &exitError{code: exitUsage, err: errors.New("--dataset and --force need --stage")}
	}
	opts := engine.RunOptions{Log: env.stderr, Live: *progress == "live" || (*progress == "auto" && isTerminal(env.stderr)),
		AllowPartial: *allowPartial}
	if *stage != "" {
		sel, err := p.SelectRun(*stage, *dataset, *force)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		opts.Nodes, opts.Force = sel.Nodes, sel.Force
	}
	store, err := openStore(p.Spec.State)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Lock(); err != nil {
		return err
	}
	started := time.Now()
	results, err := p.Run(ctx, store, opts)
	summarize(env.stderr, results)
	if ran(results) {
		// What the run produced, as `eaglet status` shows it. The run
		// still holds the lock, but it is over: what it stopped is
		// incomplete, not running.
		rows, serr := collectStatus(p, store, false)
		if serr == nil {
			printStatus(env.stdout, p, rows)
		}
		printSummary(env.stderr, time.Since(started), results, rows, p.Spec.Path)
		if launched, err := launchedFigures(p, store, started); err == nil {
			printReplicas(env.stderr, "  ", launched)
		}
		// The report is a view of the store: a run that cannot write it
		// has still done its work, so it only says so. It is written even
		// when interrupted, hence not under ctx.
		path := reportPath(p)
		if err := ownReport(path); err != nil {
			fmt.Fprintf(env.stderr, "  report not written: %v\n", err)
		} else if err := writeReport(context.Background(), p, store, path); err != nil {
			fmt.Fprintf(env.stderr, "  report not written: %v\n", err)
		} else {
			fmt.Fprintf(env.stderr, "  report: %s\n", path)
		}
	}
	if errors.Is(err, engine.ErrInterrupted) {
		return &exitError{code: exitInterrupted, err: errors.New("interrupted; run again to continue where it stopped")}
	}
	if err != nil {
		return withDiskHint(err, results, p.Spec.State)
	}
	failed := 0
	for _, r := range results {
		failed += r.Failed
	}
	if failed > 0 {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s failed (see `eaglet status`); run again to retry them", human.Plural(failed, "record"))}
	}
	return nil
}

// withDiskHint adds what to do to a run's error when an instance stopped
// on a full disk: nothing committed is lost, and the next run goes on.
func withDiskHint(err error, results []*engine.Result, statePath string) error {
	if !slices.ContainsFunc(results, func(r *engine.Result) bool { return state.DiskFull(r.Err) }) {
		return err
	}
	return fmt.Errorf("%w\nthe disk is full: free space where the state store (%s) and the outputs are, then run again; what was committed is kept and the run goes on from there", err, statePath)
}

func ran(results []*engine.Result) bool {
	for _, r := range results {
		if r.Outcome != engine.UpToDate {
			return true
		}
	}
	return false
}

func summarize(w io.Writer, results []*engine.Result) {
	counts := map[engine.Outcome]int{}
	for _, r := range results {
		counts[r.Outcome]++
	}
	upToDate := counts[engine.UpToDate]
	if upToDate == len(results) {
		fmt.Fprintf(w, "everything is up to date (%s); nothing to do\n", human.Plural(upToDate, "instance"))
		return
	}
	// Every outcome is named: a run stopped by Ctrl-C ran no instance to
	// the end, and "0 instances ran" alone hid the three it stopped.
	parts := []string{human.Plural(counts[engine.Ran], "instance") + " " + engine.Ran.String()}
	for _, o := range []engine.Outcome{engine.Interrupted, engine.Errored, engine.Blocked} {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	were := "were"
	if upToDate == 1 {
		were = "was"
	}
	fmt.Fprintf(w, "%s, %d %s up to date\n", strings.Join(parts, ", "), upToDate, were)
}

// printSummary ends a run's log with what it cost and what is left: wall
// time, requests and retries, answers reused, tokens and dollars of this
// run, and every instance with work left with the command that does it.
func printSummary(w io.Writer, wall time.Duration, results []*engine.Result, rows []instanceStatus, spec string) {
	var requests, reused int
	var prompt, completion int64
	var dollars float64
	retries := map[string]int{}
	for _, r := range results {
		requests += r.Requests
		reused += r.Reused
		prompt += r.PromptTokens
		completion += r.CompletionTokens
		dollars += r.Dollars
		for k, v := range r.Retries {
			retries[k] += v
		}
	}
	fmt.Fprintf(w, "summary: %s wall time\n", wall.Round(time.Millisecond))
	if requests > 0 || reused > 0 {
		line := fmt.Sprintf("  requests: %d sent", requests)
		if n := sumValues(retries); n > 0 {
			line += fmt.Sprintf(", %d of them retries (%s)", n, byCount(retries))
		}
		if reused > 0 {
			line += fmt.Sprintf("; %s reused with no request", human.Plural(reused, "earlier answer"))
		}
		fmt.Fprintln(w, line)
	}
	if completion > 0 {
		line := fmt.Sprintf("  this run: %s prompt and %s completion tokens", count(prompt), count(completion))
		if dollars > 0 {
			line += fmt.Sprintf(", $%.2f", dollars)
		}
		fmt.Fprintln(w, line)
	}
	var todo []string
	listed := map[string]bool{}
	for _, r := range rows {
		if r.Failed > 0 {
			listed[r.Instance] = true
			todo = append(todo, fmt.Sprintf("%s: %s failed; `eaglet run %s` retries them", r.Instance, human.Plural(r.Failed, "record"), spec))
		}
		if n := r.Reasons[stages.Skipped.String()+": "+stages.ReasonBudget]; n > 0 {
			todo = append(todo, fmt.Sprintf("%s: %s skipped for the budget; raise it and run again", r.Instance, human.Plural(n, "record")))
		}
	}
	blocked := map[string]bool{}
	for _, r := range results {
		if r.Outcome == engine.Errored && !listed[r.Node.ID] {
			// Its error is printed above; its state may not be readable
			// (a damaged store), so rows need not show it.
			todo = append(todo, fmt.Sprintf("%s failed (the error above says why); `eaglet run %s` tries it again", r.Node.ID, spec))
			continue
		}
		var partial *engine.PartialInputError
		if r.Outcome == engine.Blocked && errors.As(r.Err, &partial) {
			todo = append(todo, fmt.Sprintf("%s: %s", r.Node.ID, partial))
			blocked[r.Node.ID] = true
		}
	}
	// An interrupted run, or one of a single stage, leaves instances
	// behind that no record counts above.
	var behind []string
	for _, r := range rows {
		switch r.State {
		case engine.NotRun, engine.Incomplete, engine.Waiting, engine.Stale:
			if !blocked[r.Instance] {
				behind = append(behind, fmt.Sprintf("%s %s", r.Instance, r.State))
			}
		}
	}
	if len(behind) > 0 {
		const most = 6
		list := strings.Join(behind[:min(len(behind), most)], ", ")
		if len(behind) > most {
			list += fmt.Sprintf(" and %d more", len(behind)-most)
		}
		todo = append(todo, fmt.Sprintf("%s not up to date (%s); `eaglet run %s` continues", human.Plural(len(behind), "instance"), list, spec))
	}
	if len(todo) == 0 {
		fmt.Fprintln(w, "  nothing left to do")
		return
	}
	fmt.Fprintln(w, "  left to do:\n    "+strings.Join(todo, "\n    "))
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// byCount lists counts by kind, most first: "http 503 ×8, http 429 ×4".
func byCount(m map[string]int) string {
	kinds := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
