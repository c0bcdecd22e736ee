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
	fs := newFlags(env, "kinds", "[--markdown]", "Lists every stage kind with what it does, and each option of its `with:`\nwith its type, default and meaning, from the kinds' own declarations;\nthen every endpoint API with the options of its `options:`.\n--markdown prints the tables the README's spec reference holds.")
	markdown := fs.Bool("markdown", false, "print a Markdown table")
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

// writeKindsMarkdown writes the README's kind table and, after a blank
// line, its endpoint API table; a test checks that the README holds
// exactly these.
func writeKindsMarkdown(out io.Writer) error {
	var b strings.Builder
	b.WriteString("| kind | what it does | options |\n|---|---|---|\n")
	for _, name := range stages.Names() {
		k, _ := stages.Lookup(name)
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.Name, k.Summary, markdownOptions(k.Docs()))
	}
	b.WriteString("\n| api | what it is | `options` |\n|---|---|---|\n")
	for _, name := range specs.APINames() {
		a, _ := specs.LookupAPI(name)
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", a.Name, a.Summary, markdownOptions(specs.OptionDocs(a.Options())))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// markdownOptions lists options in a table cell: name (doc; default).
func markdownOptions(docs []specs.OptionDoc) string {
	var opts []string
	for _, o := range docs {
		s := "`" + o.Name + "`"
		var about []string
		if o.Doc != "" {
			about = append(about, o.Doc)
		}
		if o.Default != "" {
			about = append(about, "default `"+o.Default+"`")
		}
		if len(about) > 0 {
			s += " (" + strings.Join(about, "; ") + ")"
		}
		opts = append(opts, s)
	}
	return strings.Join(opts, ", ")
}

// defaultText is an option's default as the listing prints it.
func defaultText(d string) string {
	if d == "" {
		return "-"
	}
	return "default " + d
}
