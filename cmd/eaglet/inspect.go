package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/dataset"
	"github.com/eaglet-dev/eaglet/internal/human"
)

func init() {
	register(command{
		name:    "inspect",
		summary: "show what eaglet makes of dataset files: shape, records, roles, tools, a sample, every problem",
		run:     runInspect,
		examples: []example{
			{"what eaglet makes of a dataset file, every problem with its line", "eaglet inspect specs/examples/data/code.jsonl"},
			{"an odd shape: name its fields and print the fourth record normalized", "eaglet inspect --map messages=dialog,role=speaker --sample 3 dialogs.jsonl"},
		},
	})
}

// inspectReport is what inspect finds in one file; -json prints it as is.
type inspectReport struct {
	File      string `json:"file"`
	Container string `json:"container,omitempty"`
	Shape     string `json:"shape,omitempty"`
	Records   int    `json:"records"`
	BadRows   int    `json:"bad_rows"`
	// Duplicates counts records whose content repeats an earlier one; the
	// load stage keeps the first and drops the rest.
	Duplicates int            `json:"duplicates"`
	Roles      map[string]int `json:"roles"`
	Tools      map[string]int `json:"tools"`
	ToolCalls  int            `json:"tool_calls"`
	Reasoning  int            `json:"reasoning_messages"`
	MultiTurn  int            `json:"pending_turns"`
	Sample     *conv.Record   `json:"sample,omitempty"`
	Problems   []string       `json:"problems"`
}

func runInspect(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "inspect", "[--format NAME] [--map NAME=KEY,...] [--sample N] [--max-problems N] [--json] FILE...", "Shows what eaglet makes of dataset files before any run. Exits 1 when any file\nhas a problem, so scripts can gate on it.")
	var opts dataset.Options
	fs.StringVar(&opts.Format, "format", "auto", "row shape: auto or a format name (see the dataset README)")
	mapping := fs.String("map", "", "field mapping as name=key,... (e.g. messages=dialog,role=speaker,role.user=customer)")
	sample := fs.Int("sample", 0, "index of the record to print normalized")
	maxProblems := fs.Int("max-problems", 0, "most problems to list per file (0: all)")
	asJSON := fs.Bool("json", false, "print one JSON report per file instead of text")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: exitUsage, err: errors.New("")}
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("no files given")}
	}
	m, err := parseMapping(*mapping)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	opts.Mapping = m
	bad := 0
	for _, path := range fs.Args() {
		rep, err := inspectFile(ctx, path, opts, *sample)
		if err != nil {
			return err
		}
		if len(rep.Problems) > 0 {
			bad++
		}
		if *asJSON {
			b, _ := json.Marshal(rep)
			fmt.Fprintf(env.stdout, "%s\n", b)
			continue
		}
		printReport(env.stdout, rep, *maxProblems)
	}
	if bad > 0 {
		have := "have"
		if bad == 1 {
			have = "has"
		}
		return &exitError{code: exitFailure, err: fmt.Errorf("%d of %s %s problems", bad, human.Plural(fs.NArg(), "file"), have)}
	}
	return nil
}

// parseMapping reads name=key pairs separated by commas; a role's words
// are separated by '|' (role.user=customer|client).
func parseMapping(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("-map: %q is not name=key", kv)
		}
		m[strings.TrimSpace(k)] = strings.ReplaceAll(strings.TrimSpace(v), "|", ",")
	}
	return m, nil
}

// inspectFile reads every row of path, going on past bad rows so that
// every problem is listed. Only failing to open the file is an error.
func inspectFile(ctx context.Context, path string, opts dataset.Options, sample int) (*inspectReport, error) {
	rep := &inspectReport{File: path, Roles: map[string]int{}, Tools: map[string]int{}, Problems: []string{}}
	r, err := dataset.Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	seen := map[string]bool{}
	for {
		if rep.Records%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		var re *dataset.RowError
		if errors.As(err, &re) {
			rep.BadRows++
			rep.Problems = append(rep.Problems, re.Error())
			if re.Fatal() {
				break
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if rep.Records == sample {
			rep.Sample = rec
		}
		rep.Records++
		if seen[rec.Key] {
			rep.Duplicates++
		}
		seen[rec.Key] = true
		for _, msg := range rec.Messages {
			rep.Roles[msg.Role]++
			rep.ToolCalls += len(msg.ToolCalls)
			if msg.Reasoning != "" {
				rep.Reasoning++
			}
		}
		for _, t := range rec.Tools {
			rep.Tools[t.Name]++
		}
		if _, follow := dataset.SplitTurns(rec.Messages); len(follow) > 0 {
			rep.MultiTurn++
		}
	}
	rep.Container, rep.Shape = r.Container(), r.Detected()
	return rep, nil
}

func printReport(w io.Writer, rep *inspectReport, maxProblems int) {
	fmt.Fprintf(w, "%s\n", rep.File)
	fmt.Fprintf(w, "  container  %s\n  shape      %s\n", rep.Container, orNone(rep.Shape))
	fmt.Fprintf(w, "  records    %d loaded, %d bad", rep.Records, rep.BadRows)
	if rep.Duplicates > 0 {
		fmt.Fprintf(w, ", %s (load keeps the first)", human.Plural(rep.Duplicates, "duplicate"))
	}
	fmt.Fprintln(w)
	var roles []string
	for _, role := range []string{conv.System, conv.User, conv.Assistant, conv.Tool} {
		if n := rep.Roles[role]; n > 0 {
			roles = append(roles, fmt.Sprintf("%s %d", role, n))
		}
	}
	fmt.Fprintf(w, "  roles      %s\n", orNone(strings.Join(roles, ", ")))
	names := make([]string, 0, len(rep.Tools))
	for name := range rep.Tools {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if rep.Tools[names[i]] != rep.Tools[names[j]] {
			return rep.Tools[names[i]] > rep.Tools[names[j]]
		}
		return names[i] < names[j]
	})
	var tools []string
	for i, name := range names {
		if i == 10 {
			tools = append(tools, fmt.Sprintf("and %d more", len(names)-10))
			break
		}
		tools = append(tools, fmt.Sprintf("%s (%d)", name, rep.Tools[name]))
	}
	fmt.Fprintf(w, "  tools      %s\n", orNone(strings.Join(tools, ", ")))
	fmt.Fprintf(w, "  calls      %s, %s with reasoning, %s with turns awaiting answers\n",
		human.Plural(rep.ToolCalls, "tool call"), human.Plural(rep.Reasoning, "message"), human.Plural(rep.MultiTurn, "record"))
	if len(rep.Problems) > 0 {
		fmt.Fprintf(w, "  problems   %d\n", len(rep.Problems))
		for i, p := range rep.Problems {
			if maxProblems > 0 && i == maxProblems {
				fmt.Fprintf(w, "    ... and %d more (-max-problems 0 lists all)\n", len(rep.Problems)-i)
				break
			}
			fmt.Fprintf(w, "    %s\n", p)
		}
	}
	if rep.Sample != nil {
		b, _ := json.MarshalIndent(rep.Sample, "    ", "  ")
		fmt.Fprintf(w, "  sample     record %d\n    %s\n", rep.Sample.Source.Index, b)
	}
	fmt.Fprintln(w)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
