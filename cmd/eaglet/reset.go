package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/eaglet-dev/eaglet/engine"
)

func init() {
	register(command{
		name:    "reset",
		summary: "forget a stage's results (and everything downstream of it)",
		run:     runReset,
		examples: []example{
			{"list what forgetting the filter stage would forget", "eaglet reset --stage filter specs/examples/quickstart.yaml"},
			{"forget one dataset's generate and what follows it", "eaglet reset --stage generate --dataset chat --yes specs/examples/quickstart.yaml"},
		},
	})
}

func runReset(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "reset", "--stage NAME [--dataset NAME] [--yes] [--allow-outside] SPEC",
		"Deletes the stored results of a stage instance and of every instance that depends on it,\nso the next run redoes them. Files written by merge are left in place.")
	stage := fs.String("stage", "", "the stage to forget (required)")
	dataset := fs.String("dataset", "", "only this dataset's instance")
	yes := fs.Bool("yes", false, "really forget (without it, reset only lists what it would forget)")
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
	store, err := openLocked(p)
	if err != nil {
		return err
	}
	if store == nil {
		fmt.Fprintf(env.stdout, "nothing to reset: %s has not run\n", p.Spec.Name)
		return nil
	}
	defer store.Close()
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	verb := "would forget"
	if *yes {
		verb = "forgot"
	}
	for _, id := range ids {
		st, err := engine.InstanceStatus(store, id, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "%s %s (%d done, %s completion tokens)\n", verb, id, st.Done, count(st.CompletionTokens))
	}
	if !*yes {
		// Generated answers cost GPU hours or dollars: never delete them on a typo.
		return &exitError{code: exitFailure, err: errors.New("nothing deleted; add --yes to forget these results")}
	}
	return store.Reset(ids)
}
