package stages_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

// This file is the template for a new stage kind (see CONTRIBUTING.md):
// copy it to stages/<kind>/<kind>.go, drop the test, and add one import
// line to stages/all/all.go. The kind here masks e-mail addresses in
// prompts before they reach a server.

func init() {
	stages.Register(stages.Define("example_mask_emails",
		"replace e-mail addresses in prompts by a placeholder",
		checkMask, newMask))
}

// maskOptions are decoded from the stage's `with:`; every field is part of
// the fingerprint unless tagged fp:"-", so a changed placeholder reruns
// the stage and what follows it. The doc and default tags are what `eaglet
// kinds` and the README's kind table say of the option; the constructor
// gets the default filled in when the spec leaves the option out.
type maskOptions struct {
	Placeholder string `yaml:"placeholder" default:"<email>" doc:"what an address becomes"`
}

// checkMask validates options once per stage, before anything runs;
// errors carry the option's position so the user sees file:line:col.
func checkMask(_ *specs.Spec, st *specs.Stage, o *maskOptions) error {
	if p := o.Placeholder; strings.Contains(p, "@") {
		return &specs.Error{Pos: st.OptionPos("placeholder"), Msg: fmt.Sprintf("stage %s: placeholder %q holds an @, which would be masked again", st.Name, p)}
	}
	return nil
}

type mask struct{ placeholder string }

// A Mapper sees one record at a time; the engine stores each outcome, so a
// killed run resumes with the records left.
var _ stages.Mapper = (*mask)(nil)

func newMask(_ *stages.Instance, o *maskOptions) (stages.Stage, error) {
	return &mask{placeholder: o.Placeholder}, nil
}

var email = regexp.MustCompile(`[\w.+-]+@[\w-]+\.[\w.]+`)

// Process returns the changed record, or the input unchanged (Record nil).
func (m *mask) Process(_ context.Context, rec *conv.Record) (stages.Outcome, error) {
	out := *rec
	out.Messages = append([]conv.Message(nil), rec.Messages...)
	changed := false
	for i, msg := range out.Messages {
		if masked := email.ReplaceAllString(msg.Content, m.placeholder); masked != msg.Content {
			out.Messages[i].Content, changed = masked, true
		}
	}
	if !changed {
		return stages.Outcome{Status: stages.Done}, nil
	}
	return stages.Outcome{Status: stages.Done, Record: &out}, nil
}

// TestExampleKind runs the kind through the real engine, as every kind's
// test should: a spec, a run, and what the output file holds.
func TestExampleKind(t *testing.T) {
	dir := t.TempDir()
	rows := `{"messages": [{"role": "user", "content": "Mail ada@example.com about it."}]}
{"messages": [{"role": "user", "content": "No address here."}]}
`
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(rows), 0o644)
	enginetest.OpenAndRun(t, dir, `version: 1
name: example
state: state.db
datasets: {d: {source: d.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: mask, uses: example_mask_emails, needs: [load], foreach: datasets, with: {placeholder: "[redacted]"}}
  - {name: merge, uses: merge, needs: [mask], with: {out: out.jsonl}}
`)
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "ada@example.com") || !strings.Contains(string(b), "Mail [redacted] about it.") {
		t.Errorf("the address was not masked:\n%s", b)
	}
	err = enginetest.LoadErr(t, dir, `version: 1
name: example
datasets: {d: {source: d.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: mask, uses: example_mask_emails, needs: [load], foreach: datasets, with: {placeholder: "a@b"}}
`)
	if err == nil || !strings.Contains(err.Error(), "spec.yaml:6:99:") {
		t.Errorf("a bad placeholder should be an error at its line; got %v", err)
	}
}
