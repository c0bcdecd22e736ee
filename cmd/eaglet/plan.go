package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/internal/report"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

func init() {
	register(command{
		name:    "plan",
		summary: "show what a run would do, with token, time, cost and disk estimates",
		run:     runPlan,
		examples: []example{
			{"what a run would do and why, with tokens, time, cost and disk", "eaglet plan specs/examples/quickstart.yaml"},
			{"what a forced redo of one dataset's generate would send", "eaglet plan --stage generate --dataset chat --force specs/examples/quickstart.yaml"},
			{"in a script: exit 4 when there is work to do", "eaglet plan --detailed-exitcode specs/examples/quickstart.yaml"},
		},
	})
}

func runPlan(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "plan", "[--stage NAME [--dataset NAME] [--force]] [--detailed-exitcode] [--allow-outside] SPEC", "Shows for each stage instance whether it is up to date or will run and why, with\nestimates. Reads local files and the state store; calls no server. It records its\nestimates in the store (unless a run holds it), for the report's plan versus actual.\nWith --stage, --dataset and --force it plans what `eaglet run` with them would do.")
	detailed := fs.Bool("detailed-exitcode", false, "exit 4 when something would run, 0 when all is up to date")
	stage := fs.String("stage", "", "plan only this stage (and what it needs), as run --stage does")
	dataset := fs.String("dataset", "", "with --stage: only this dataset's instance")
	force := fs.Bool("force", false, "with --stage: as if redone even if up to date, as run --force does")
	p, store, err := specAndStore(env, fs, args)
	defer closeStore(store)
	if err != nil {
		return err
	}
	if (*dataset != "" || *force) && *stage == "" {
		return &exitError{code: exitUsage, err: errors.New("--dataset and --force need --stage")}
	}
	var sel engine.Selection
	if *stage != "" {
		if sel, err = p.SelectRun(*stage, *dataset, *force); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
	}
	steps := p.Plan(store, sel)
	what := "everything is up to date; `eaglet run` would do nothing"
	if *stage != "" {
		what = "all of it is up to date; `eaglet run` with these flags would do nothing"
	}
	printPlan(env.stdout, p, steps, what)
	printLaunches(env.stdout, launchPlans(p, steps))
	// The table keeps one line per instance; each error is shown in full
	// after it, with the spec line it points into.
	var errs []error
	for _, s := range steps {
		if s.Err != nil {
			errs = append(errs, s.Err)
		}
	}
	if len(errs) > 0 {
		fmt.Fprintln(env.stderr, p.Spec.Redact(specs.FormatErrors(errs)))
		return &exitError{code: exitSpec, err: errors.New("the plan has errors (see above)")}
	}
	if note := recordPlan(ctx, p, store, steps); note != "" {
		fmt.Fprintln(env.stderr, note)
	}
	if *detailed {
		for _, s := range steps {
			if s.Runs() {
				return &exitError{code: exitChanges, err: errors.New("")}
			}
		}
	}
	return nil
}

// printPlan writes the plan's table and its totals; upToDate is the line
// when nothing would run.
func printPlan(w io.Writer, p *engine.Pipeline, steps []*engine.Step, upToDate string) {
	fmt.Fprintf(w, "plan for %s (state %s)\n\n", p.Spec.Name, p.Spec.State)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tRECORDS\tPROMPT TOK\tCOMPLETION TOK\tTIME\tCOST\tACTION")
	var completion int64
	var seconds, dollars float64
	var disk int64
	toRun := 0
	paces, rates := map[string]bool{}, map[float64]bool{}
	for _, s := range steps {
		e := s.Estimate
		recs := fmt.Sprintf("%d", e.Records)
		if !e.Exact {
			recs = "~" + recs
		}
		row := []string{s.Node.ID, recs, count(e.PromptTokens), count(e.CompletionTokens), "", "", s.Words()}
		if s.Runs() && e.Seconds > 0 {
			row[4] = duration(e.Seconds)
		}
		if s.Runs() && e.Dollars > 0 {
			row[5] = fmt.Sprintf("$%.2f", e.Dollars)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
		if s.Runs() {
			toRun++
			completion += s.NewTokens
			seconds += e.Seconds
			dollars += e.Dollars
			if e.Seconds > 0 {
				paces[e.Pace] = true
				if e.Pace == stages.PaceMeasured {
					rates[e.Rate] = true
				}
			}
			disk += s.NewBytes
		}
	}
	tw.Flush()
	// What a stage the plan ran found (dedupe's benchmark prompts and the
	// records each took), under the table as status shows it.
	for _, s := range steps {
		if len(s.Figures) > 0 {
			fmt.Fprintf(w, "%s:\n    %s\n", s.Node.ID, strings.Join(s.Figures, "\n    "))
		}
	}
	fmt.Fprintln(w)
	if toRun == 0 {
		fmt.Fprintln(w, upToDate)
		return
	}
	fmt.Fprintf(w, "%d of %d instances would run", toRun, len(steps))
	if completion > 0 {
		fmt.Fprintf(w, "; about %s completion tokens", count(completion))
	}
	if seconds > 0 {
		fmt.Fprintf(w, ", %s of generation %s", duration(seconds), paceWords(paces, rates))
	}
	if dollars > 0 {
		fmt.Fprintf(w, ", $%.2f", dollars)
	}
	if disk > 0 {
		fmt.Fprintf(w, ", %s of output and state", human.Bytes(disk))
	}
	fmt.Fprintln(w)
}

// count writes a table's token count, a dash for none.
func count(n int64) string {
	if n == 0 {
		return "-"
	}
	return human.Int(n)
}

func duration(sec float64) string {
	return time.Duration(sec * float64(time.Second)).Round(time.Second).String()
}

// planWait is how long plan waits for a committing run to let it record
// the plan: a plan left unrecorded costs less than a run kept waiting.
const planWait = 2 * time.Second

// recordPlan keeps the plan's figures in the store (creating it before the
// first run), for the report's plan versus actual, and says why when it
// does not: a plan is advice, so nothing here fails the command. While a
// run holds the store the plan is not recorded, so that run's report
// compares it with the plan made before it.
func recordPlan(ctx context.Context, p *engine.Pipeline, store *state.Store, steps []*engine.Step) string {
	if pid := state.Holder(p.Spec.State); pid != 0 {
		return fmt.Sprintf("plan not recorded for the report: a run (pid %d) is using the store", pid)
	}
	var body report.RecordedPlan
	for _, s := range steps {
		ps := report.PlanStep{Instance: s.Node.ID, Run: s.Runs(), Records: s.Estimate.Records, Exact: s.Estimate.Exact}
		if s.Runs() {
			ps.Todo, ps.CompletionTokens, ps.Seconds, ps.Dollars = s.Todo, s.NewTokens, s.Estimate.Seconds, s.Estimate.Dollars
		}
		body.Steps = append(body.Steps, ps)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return "plan not recorded for the report: " + err.Error()
	}
	if store == nil {
		if store, err = openStore(p.Spec.State); err != nil {
			return "plan not recorded for the report: " + err.Error()
		}
		defer store.Close()
	}
	err = store.SavePlan(ctx, state.Plan{Made: time.Now(), SpecFP: specFingerprint(p), Body: data}, planWait)
	switch {
	case errors.Is(err, state.ErrBusy):
		return fmt.Sprintf("plan not recorded for the report: the store stayed busy for %s", planWait)
	case err != nil:
		return "plan not recorded for the report: " + err.Error()
	}
	return ""
}

// paceWords says where the plan's time comes from: the pace earlier
// answers came at (with it, when the stages share one), or the spec's
// tokens_per_second, a guess until the server has answered.
func paceWords(paces map[string]bool, rates map[float64]bool) string {
	measured := "at the pace the endpoints' answers came at so far"
	if len(rates) == 1 {
		for r := range rates {
			measured += fmt.Sprintf(" (%s tokens/s)", count(int64(r)))
		}
	}
	switch {
	case paces[stages.PaceMeasured] && paces[stages.PaceStated]:
		return measured + ", or their tokens_per_second where none has (a guess)"
	case paces[stages.PaceMeasured]:
		return measured
	default:
		return "at the endpoints' stated tokens_per_second (a guess until answers are measured)"
	}
}
