// Package load is the stage that reads a dataset file into canonical
// conversation records, one instance per dataset.
package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/dataset"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

func init() {
	stages.Register(stages.Define("load",
		"read a dataset file (JSONL, JSON, Parquet; any common shape) into conversations",
		check, newLoad))
}

// Options of load; the file, format and bad-row policy come from the dataset.
type Options struct {
	// Limit reads only the first N records (0: all), for trying a spec out.
	Limit int `yaml:"limit" doc:"first N records, for trials"`
}

func check(spec *specs.Spec, st *specs.Stage, _ *Options) error {
	var names []string
	for _, f := range dataset.FormatDoc() {
		names = append(names, f[0])
	}
	for _, ds := range spec.Datasets {
		// An empty format is refused where it is written, with the spec.
		if ds.Format == "" || ds.Format == "auto" || slices.Contains(names, ds.Format) {
			continue
		}
		return &specs.Error{Pos: ds.Pos, Msg: fmt.Sprintf("dataset %s: unknown format %q; use auto or one of %s", ds.Name, ds.Format, strings.Join(names, ", "))}
	}
	if st.Foreach == "" {
		return &specs.Error{Pos: st.Pos, Msg: fmt.Sprintf("stage %s: load reads one dataset per instance; add `foreach: datasets`", st.Name)}
	}
	if len(st.Needs) > 0 {
		return &specs.Error{Pos: st.Pos, Msg: fmt.Sprintf("stage %s: load reads files and needs no other stage; remove `needs:`", st.Name)}
	}
	return nil
}

// Load reads one dataset.
type Load struct {
	opts *Options
	ds   *specs.Dataset
	path string
	// redact scrubs secret values from what is stored: a path built from
	// ${DATA_TOKEN} must not reach the records or the state store.
	redact   func(string) string
	detected string
	skipped  map[string]int
}

var (
	_ stages.Batch         = (*Load)(nil)
	_ stages.Fingerprinter = (*Load)(nil)
	_ stages.Estimator     = (*Load)(nil)
)

func newLoad(inst *stages.Instance, o *Options) (stages.Stage, error) {
	return &Load{opts: o, ds: inst.Dataset, path: inst.Spec.Resolve(inst.Dataset.Source), redact: inst.Spec.Redact}, nil
}

func (l *Load) readOptions() dataset.Options {
	return dataset.Options{Format: l.ds.Format, OnError: l.ds.OnError, Mapping: l.ds.Mapping}
}

// Fingerprint identifies the file and how it is read, so editing the file
// or its format reloads it (downstream work is kept wherever records are unchanged).
func (l *Load) Fingerprint() (string, error) {
	fi, err := os.Stat(l.path)
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", l.ds.Name, err)
	}
	var mapping []string
	for k, v := range l.ds.Mapping {
		mapping = append(mapping, k+"="+v)
	}
	sort.Strings(mapping)
	// The absolute path: the same file reached from another working
	// directory is the same input.
	abs, err := filepath.Abs(l.path)
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", l.ds.Name, err)
	}
	return fmt.Sprintf("%s|%d|%d|%s|%s|%s", l.redact(abs), fi.Size(), fi.ModTime().UnixNano(), l.ds.Format, l.ds.OnError, strings.Join(mapping, ",")), nil
}

// Run reads the file. A record met twice is stored once: the engine keeps
// the first and counts the rest as duplicates, without a set in memory.
func (l *Load) Run(ctx context.Context, _ stages.Input, out stages.Output) error {
	r, err := dataset.Open(l.path, l.readOptions())
	if err != nil {
		return err
	}
	defer r.Close()
	n := 0
	for ; l.opts.Limit == 0 || n < l.opts.Limit; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var re *dataset.RowError
			if errors.As(err, &re) && !re.Fatal() {
				return fmt.Errorf("%w (set `on_error: skip` on dataset %s to skip and count bad rows)", err, l.ds.Name)
			}
			return fmt.Errorf("dataset %s: %w", l.ds.Name, err)
		}
		rec.Dataset = l.ds.Name
		// The source as the spec names it (relative to the spec file), not
		// as this process reached it: running from another directory must
		// not change what a record says.
		rec.Source.File = l.redact(l.ds.Source)
		if err := out.Emit(rec); err != nil {
			return err
		}
	}
	l.detected, l.skipped = r.Detected(), r.Skipped()
	if n == 0 {
		// Every row was bad: skipping a few is the point of on_error:
		// skip, a dataset of none is a wrong file or mapping.
		return fmt.Errorf("dataset %s: every row of %s was bad and skipped (%s); nothing to load: run `eaglet inspect %s` to see why", l.ds.Name, l.redact(l.path), skipSummary(l.skipped), l.redact(l.path))
	}
	return nil
}

func skipSummary(skipped map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(skipped)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, skipped[k]))
	}
	return strings.Join(parts, ", ")
}

// Report records what the reader detected and which rows it skipped.
func (l *Load) Report(s *stages.Report) {
	s.Detected, s.Skipped = l.detected, l.skipped
}

// Estimate counts the file's rows without converting them.
func (l *Load) Estimate(stages.Estimate) (stages.Estimate, error) {
	n, err := dataset.Count(l.path, l.readOptions())
	if err != nil {
		return stages.Estimate{}, err
	}
	if l.opts.Limit > 0 {
		n = min(n, l.opts.Limit)
	}
	est := stages.Estimate{Records: n, Exact: true}
	if fi, err := os.Stat(l.path); err == nil {
		est.Bytes = fi.Size()
	}
	est.PromptTokens = int64(n * l.ds.EstPromptTokens)
	est.Sample = l.sample(min(n, estimateSample))
	return est, nil
}

// estimateSample is how many records a plan reads to see what they hold.
const estimateSample = 64

// sample reads the file's first n records, fewer if one cannot be read:
// the run reports that.
func (l *Load) sample(n int) []*conv.Record {
	r, err := dataset.Open(l.path, l.readOptions())
	if err != nil {
		return nil
	}
	defer r.Close()
	var recs []*conv.Record
	for len(recs) < n {
		rec, err := r.Next()
		if err != nil {
			break
		}
		recs = append(recs, rec)
	}
	return recs
}
