package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/human"
)

func init() {
	register(command{
		name:    "graph",
		summary: "print the DAG as Mermaid or DOT",
		run:     runGraph,
		examples: []example{
			{"the stage DAG as Mermaid", "eaglet graph specs/examples/quickstart.yaml"},
			{"one node per stage and dataset, drawn by Graphviz", "eaglet graph --format dot --instances specs/examples/quickstart.yaml | dot -Tsvg > dag.svg"},
		},
	})
}

func runGraph(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "graph", "[--format mermaid|dot] [--instances] [--allow-outside] SPEC", "Prints the stage DAG; --instances shows one node per stage and dataset.")
	format := fs.String("format", "mermaid", "mermaid or dot")
	instances := fs.Bool("instances", false, "one node per stage instance (stage x dataset)")
	p, err := specFromArgs(env, fs, args)
	if err != nil {
		return err
	}
	type edge struct{ from, to string }
	var nodes []string
	labels := map[string]string{}
	var edges []edge
	if *instances {
		for _, n := range p.Nodes {
			nodes = append(nodes, n.ID)
			labels[n.ID] = n.ID + " (" + n.Stage.Kind.Name + ")"
			for _, up := range n.Needs {
				edges = append(edges, edge{up.ID, n.ID})
			}
		}
	} else {
		for _, st := range p.Spec.Stages {
			nodes = append(nodes, st.Name)
			label := st.Name + " (" + st.Uses + ")"
			if st.Foreach != "" {
				label += " x" + human.Plural(len(p.Spec.Datasets), "dataset")
			}
			labels[st.Name] = label
			for _, n := range st.Needs {
				edges = append(edges, edge{n, st.Name})
			}
		}
	}
	id := func(s string) string {
		return strings.NewReplacer("[", "_", "]", "", "-", "_", ".", "_").Replace(s)
	}
	w := env.stdout
	switch *format {
	case "mermaid":
		fmt.Fprintln(w, "flowchart LR")
		for _, n := range nodes {
			fmt.Fprintf(w, "  %s[\"%s\"]\n", id(n), labels[n])
		}
		for _, e := range edges {
			fmt.Fprintf(w, "  %s --> %s\n", id(e.from), id(e.to))
		}
	case "dot":
		fmt.Fprintf(w, "digraph %q {\n  rankdir=LR;\n", p.Spec.Name)
		for _, n := range nodes {
			fmt.Fprintf(w, "  %q [label=%q];\n", n, labels[n])
		}
		for _, e := range edges {
			fmt.Fprintf(w, "  %q -> %q;\n", e.from, e.to)
		}
		fmt.Fprintln(w, "}")
	default:
		return &exitError{code: exitUsage, err: errors.New("--format must be mermaid or dot")}
	}
	return nil
}
