package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/report"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/evaluate"
	"github.com/eaglet-dev/eaglet/state"
)

func init() {
	register(command{
		name:    "report",
		summary: "write the run's HTML report: lengths, outcomes, throughput, budget, records",
		run:     runReport,
		examples: []example{
			{"write report.html beside the state store", "eaglet report specs/examples/quickstart.yaml"},
			{"write it elsewhere", "eaglet report --out quickstart.html specs/examples/quickstart.yaml"},
		},
	})
}

func runReport(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "report", "[--out FILE] [--allow-outside] SPEC",
		"Writes one self-contained HTML file (no network needed to view it) from the state store,\nread-only: it may run beside a run. The default file is report.html beside the store.")
	out := fs.String("out", "", "the HTML file to write (default: report.html beside the state store)")
	p, err := specFromArgs(env, fs, args)
	if err != nil {
		return err
	}
	store, err := state.OpenReadOnly(p.Spec.State)
	if err != nil {
		return err
	}
	defer store.Close()
	path := *out
	if path == "" {
		path = reportPath(p)
		if why := unwritable(path); why != "" {
			return fmt.Errorf("write report %s: %s; pass --out FILE to write it elsewhere", path, why)
		}
	}
	if err := writeReport(ctx, p, store, path); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "wrote %s\n", path)
	return nil
}

// reportPath is where a run leaves its report: beside the state store.
func reportPath(p *engine.Pipeline) string {
	return filepath.Join(filepath.Dir(p.Spec.State), "report.html")
}

// reportInput tells the report what the pipeline's instances are, and
// what the servers eaglet launched did as store keeps it.
func reportInput(p *engine.Pipeline, store *state.Store, live bool) (report.Input, error) {
	in := report.Input{Spec: p.Spec.Name, SpecPath: p.Spec.Path, StatePath: p.Spec.State, Live: live, SpecFP: specFingerprint(p)}
	for _, n := range p.Nodes {
		i := report.Instance{ID: n.ID, Stage: n.Stage.Spec.Name}
		if n.Dataset != nil {
			i.Dataset, i.EstCompletion = n.Dataset.Name, n.Dataset.EstCompletionTokens
		}
		for _, up := range n.Needs {
			i.Upstream = append(i.Upstream, up.ID)
		}
		if o, ok := n.Stage.Options.(stages.EndpointUser); ok {
			i.Endpoint = o.EndpointName()
			if ep := p.Spec.Endpoint(i.Endpoint); ep != nil && ep.Price != nil {
				i.Price = &report.Price{Input: ep.Price.Input, Output: ep.Price.Output}
			}
		}
		if o, ok := n.Stage.Options.(stages.Budgeted); ok {
			i.Budget = budgetOf(p, n, o.BudgetLimits())
		}
		if o, ok := n.Stage.Options.(*evaluate.Options); ok {
			if in.Evaluations == nil {
				in.Evaluations = map[string]report.Evaluation{}
			}
			in.Evaluations[n.ID] = evaluationOf(o)
		}
		in.Instances = append(in.Instances, i)
	}
	figs, err := launchedFigures(p, store, time.Time{})
	in.Launched = reportLaunched(figs)
	return in, err
}

// evaluationOf is what the report recomputes an evaluate stage's figures
// with: its buckets, its drafters' order and its bootstrap's seed.
func evaluationOf(o *evaluate.Options) report.Evaluation {
	ev := report.Evaluation{Buckets: o.Buckets, Seed: uint64(o.Seed)}
	for _, d := range o.Drafters {
		ev.Drafters = append(ev.Drafters, d.Name)
	}
	return ev
}

// budgetOf gives the report an instance's budget, its limits evaluated
// as the engine evaluates an instance's options: against the spec's vars,
// the dataset and the instance's input.
func budgetOf(p *engine.Pipeline, n *engine.Node, b *stages.BudgetLimits) *report.Budget {
	if b == nil {
		return nil
	}
	return &report.Budget{Shared: b.Shared, Limits: func(in specs.InputInfo) (map[string]float64, error) {
		env := p.Spec.Env(n.Dataset, in)
		out := map[string]float64{}
		for name, e := range b.Limits {
			v, err := e.EvalFloat(env)
			if err != nil {
				return nil, err
			}
			out[name] = v
		}
		return out, nil
	}}
}

// specFingerprint identifies the spec file's content, for the report to
// tell whether the recorded plan was made for the spec as it is. It is the
// file's hash: a ${VAR} the spec reads is not part of it.
func specFingerprint(p *engine.Pipeline) string {
	src, err := os.ReadFile(p.Spec.Path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// generatorMark is how a file says it is an eaglet report.
const generatorMark = `<meta name="generator" content="eaglet report">`

// ownReport says whether path may be written by a run: it does not exist
// or is an earlier report. A run never writes over a file eaglet did not
// write (a report.html of the user's own beside the store).
func ownReport(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 1024)
	n, _ := io.ReadFull(f, head)
	if !bytes.Contains(head[:n], []byte(generatorMark)) {
		return fmt.Errorf("%s is not an eaglet report; move it away, or write the report elsewhere with `eaglet report --out FILE`", path)
	}
	return nil
}

// writeReport builds the report and writes it to path through a temporary
// file, so a browser reloading it never reads half a page.
func writeReport(ctx context.Context, p *engine.Pipeline, store *state.Store, path string) error {
	in, err := reportInput(p, store, false)
	if err != nil {
		return err
	}
	page, err := report.Build(ctx, store, in)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*.html")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	defer os.Remove(tmp.Name())
	var buf bytes.Buffer
	if err := page.Render(&buf); err != nil {
		tmp.Close()
		return err
	}
	// Records and URLs may quote a secret of the spec's environment.
	if _, err := io.WriteString(tmp, p.Spec.Redact(buf.String())); err != nil {
		tmp.Close()
		return fmt.Errorf("write report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	// CreateTemp makes the file private; a report is for sharing.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
