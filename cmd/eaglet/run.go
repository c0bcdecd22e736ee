package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/state"
)

func init() {
	register(command{name: "run", summary: "run the pipeline; resumes where a previous run stopped", run: runRun})
}

func runRun(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "run", "[--stage NAME [--dataset NAME] [--force]] [--allow-partial] [--progress auto|live|lines] SPEC",
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
		sel, err := p.Select(*stage, *dataset, *force)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		opts.Nodes = sel
		if *force {
			first, _ := p.Select(*stage, *dataset, false)
			opts.Force = map[*engine.Node]bool{}
			for _, n := range first {
				opts.Force[n] = true
			}
		}
	}
	store, err := state.Open(p.Spec.State)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Lock(); err != nil {
		return err
	}
	results, err := p.Run(ctx, store, opts)
	summarize(env.stderr, results)
	if ran(results) {
		// What the run produced, as `eaglet status` shows it.
		if rows, serr := collectStatus(p, store); serr == nil {
			printStatus(env.stdout, p, rows)
		}
	}
	if errors.Is(err, engine.ErrInterrupted) {
		return &exitError{code: exitInterrupted, err: errors.New("interrupted; run again to continue where it stopped")}
	}
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		failed += r.Failed
	}
	if failed > 0 {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s failed (see `eaglet status`); run again to retry them", engine.Plural(failed, "record"))}
	}
	return nil
}

func ran(results []*engine.Result) bool {
	for _, r := range results {
		if r.Action != "up to date" {
			return true
		}
	}
	return false
}

func summarize(w io.Writer, results []*engine.Result) {
	ran, upToDate := 0, 0
	for _, r := range results {
		switch r.Action {
		case "ran":
			ran++
		case "up to date":
			upToDate++
		}
	}
	if ran == 0 && upToDate == len(results) {
		fmt.Fprintf(w, "everything is up to date (%s); nothing to do\n", engine.Plural(upToDate, "instance"))
		return
	}
	were := "were"
	if upToDate == 1 {
		were = "was"
	}
	fmt.Fprintf(w, "%s ran, %d %s up to date\n", engine.Plural(ran, "instance"), upToDate, were)
}
