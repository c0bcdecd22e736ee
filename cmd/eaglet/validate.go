package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/eaglet-dev/eaglet/internal/human"
)

func init() {
	register(command{
		name:    "validate",
		summary: "check a spec and report every problem at once",
		run:     runValidate,
		examples: []example{
			{"check a spec: every problem at once, as FILE:LINE:COL", "eaglet validate specs/examples/quickstart.yaml"},
			{"a spec whose outputs go outside its directory", "OUT=/data/run eaglet validate --allow-outside specs/examples/eagle3.yaml"},
		},
	})
}

func runValidate(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "validate", "[--allow-outside] SPEC", "Checks the spec (keys, types, environment variables, expressions, the DAG)\nand each instance's options as evaluated for its dataset, without reading data\nor calling any server. Problems print as FILE:LINE:COL.")
	a, err := parseSpecArgs(fs, args)
	if err != nil {
		return err
	}
	p, err := loadPipeline(env, a)
	if err != nil {
		return err
	}
	if err := p.Check(); err != nil {
		fmt.Fprintln(env.stderr, p.Spec.Redact(err.Error()))
		return &exitError{code: exitSpec, err: errors.New("")}
	}
	fmt.Fprintf(env.stdout, "%s: ok (%s, %s, %s)\n", a.path,
		human.Plural(len(p.Spec.Datasets), "dataset"), human.Plural(len(p.Spec.Stages), "stage"), human.Plural(len(p.Nodes), "instance"))
	return nil
}
