package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/eaglet-dev/eaglet/state"
)

func init() {
	register(command{name: "reset", summary: "forget a stage's results (and everything downstream of it)", run: runReset})
}

func runReset(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "reset", "--stage NAME [--dataset NAME] SPEC",
		"Deletes the stored results of a stage instance and of every instance that depends on it,\nso the next run redoes them. Files written by merge are left in place.")
	stage := fs.String("stage", "", "the stage to forget (required)")
	dataset := fs.String("dataset", "", "only this dataset's instance")
	p, err := specFromArgs(env, fs, args)
	if err != nil {
		return err
	}
	if *stage == "" {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("--stage is required")}
	}
	nodes, err := p.Select(*stage, *dataset, true)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if !state.Exists(p.Spec.State) {
		fmt.Fprintf(env.stdout, "nothing to reset: %s has not run\n", p.Spec.Name)
		return nil
	}
	store, err := state.Open(p.Spec.State)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Lock(); err != nil {
		return err
	}
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	if err := store.Reset(ids); err != nil {
		return err
	}
	for _, id := range ids {
		fmt.Fprintf(env.stdout, "forgot %s\n", id)
	}
	return nil
}
