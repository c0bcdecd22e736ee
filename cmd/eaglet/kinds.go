package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

func init() {
	register(command{
		name:    "kinds",
		summary: "list every stage kind and its options",
		run:     runKinds,
		examples: []example{
			{"every stage kind and endpoint API with its options", "eaglet kinds"},
			{"the same as the Markdown tables of docs/spec.md", "eaglet kinds --markdown"},
		},
	})
}

func runKinds(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "kinds", "[--markdown]", "Lists every stage kind with what it does, and each option of its `with:`\nwith its type, default and meaning, from the kinds' own declarations;\nthen every endpoint API with the options of its `options:`.\n--markdown prints them as the Markdown of docs/spec.md.")
	markdown := fs.Bool("markdown", false, "print Markdown tables, as docs/spec.md holds them")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: exitUsage, err: errors.New("")}
	}
	if fs.NArg() > 0 {
		return &exitError{code: exitUsage, err: errors.New("kinds takes no arguments")}
	}
	if *markdown {
		return writeKindsMarkdown(env.stdout)
	}
	w := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	for i, name := range stages.Names() {
		k, _ := stages.Lookup(name)
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %s\n", k.Name, k.Summary)
		listOptions(w, k.Docs())
	}
	fmt.Fprintf(w, "\nEndpoint APIs (an endpoint's `api:`, with its `options:`):\n")
	for _, name := range specs.APINames() {
		a, _ := specs.LookupAPI(name)
		fmt.Fprintf(w, "\napi %s: %s\n", a.Name, a.Summary)
		listOptions(w, specs.OptionDocs(a.Options()))
	}
	return w.Flush()
}

func listOptions(w io.Writer, opts []specs.OptionDoc) {
	for _, o := range opts {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", o.Name, o.Type, defaultText(o.Default), o.Doc)
	}
}

// writeKindsMarkdown writes the stage kinds and endpoint APIs of
// docs/spec.md: a table of the kinds, then each kind's and each API's
// options with type, default and meaning. A test checks that docs/spec.md
// holds exactly this between its generated markers.
func writeKindsMarkdown(out io.Writer) error {
	var b strings.Builder
	b.WriteString("## Stage kinds\n\n| kind | what it does |\n|---|---|\n")
	for _, name := range stages.Names() {
		k, _ := stages.Lookup(name)
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", k.Name, k.Name, markdownCell(k.Summary))
	}
	for _, name := range stages.Names() {
		k, _ := stages.Lookup(name)
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n", k.Name, sentence(k.Summary))
		markdownOptions(&b, "with", k.Docs())
	}
	b.WriteString("\n## Endpoint APIs\n\n| api | what it is |\n|---|---|\n")
	for _, name := range specs.APINames() {
		a, _ := specs.LookupAPI(name)
		fmt.Fprintf(&b, "| [`%s`](#api-%s) | %s |\n", a.Name, a.Name, markdownCell(a.Summary))
	}
	for _, name := range specs.APINames() {
		a, _ := specs.LookupAPI(name)
		fmt.Fprintf(&b, "\n### api: %s\n\n%s\n\n", a.Name, sentence(a.Summary))
		markdownOptions(&b, "options", specs.OptionDocs(a.Options()))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// markdownOptions writes a table of options, one row each: name, type,
// default and meaning.
func markdownOptions(b *strings.Builder, key string, docs []specs.OptionDoc) {
	if len(docs) == 0 {
		fmt.Fprintf(b, "No `%s:` options.\n", key)
		return
	}
	fmt.Fprintf(b, "| `%s:` option | type | default | meaning |\n|---|---|---|---|\n", key)
	for _, o := range docs {
		def := ""
		if o.Default != "" {
			def = "`" + o.Default + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", o.Name, o.Type, def, markdownCell(o.Doc))
	}
}

// sentence makes a summary a sentence: capitalized, with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// markdownCell keeps a text inside its table cell.
func markdownCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
}

// defaultText is an option's default as the listing prints it.
func defaultText(d string) string {
	if d == "" {
		return "-"
	}
	return "default " + d
}
