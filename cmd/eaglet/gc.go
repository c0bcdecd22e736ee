package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/internal/human"
)

func init() {
	register(command{
		name:    "gc",
		summary: "delete answers kept for going back (superseded, set aside, of removed datasets)",
		run:     runGC,
		examples: []example{
			{"list the kept answers the spec no longer uses, with their size", "eaglet gc specs/examples/quickstart.yaml"},
			{"delete those not written for a week, and compact the store", "eaglet gc --older-than 168h --yes specs/examples/quickstart.yaml"},
		},
	})
}

func runGC(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "gc", "[--older-than DURATION] [--yes] [--allow-outside] SPEC",
		"The store keeps every answer it was ever given, so that setting an option back, raising a\n"+
			"cap again or renaming a dataset costs no request. gc deletes what the spec's current output\n"+
			"does not use: answers superseded by a changed option, outcomes set aside by a lowered cap,\n"+
			"and results of instances the spec no longer has. Without --yes it only says what it would delete.")
	olderThan := fs.Duration("older-than", 0, "only what was last written at least this long ago (e.g. 168h)")
	yes := fs.Bool("yes", false, "really delete (without it, gc only lists what it would delete)")
	p, err := specFromArgs(env, fs, args)
	if err != nil {
		return err
	}
	if *olderThan < 0 {
		return &exitError{code: exitUsage, err: errors.New("--older-than must be positive")}
	}
	store, err := openLocked(p)
	if err != nil {
		return err
	}
	if store == nil {
		fmt.Fprintf(env.stdout, "nothing to collect: %s has not run\n", p.Spec.Name)
		return nil
	}
	defer store.Close()
	keep := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		keep[i] = n.ID
	}
	before := time.Now().Add(-*olderThan)
	g, err := store.FindGarbage(keep, before)
	if err != nil {
		return err
	}
	verb := "would delete"
	if *yes {
		verb = "deleted"
	}
	fmt.Fprintf(env.stdout, "%s %s superseded by changed options (%s)\n", verb, human.Plural(g.Superseded, "answer"), human.Bytes(g.SupersededB))
	fmt.Fprintf(env.stdout, "%s %s set aside when their input left (%s)\n", verb, human.Plural(g.SetAside, "outcome"), human.Bytes(g.SetAsideB))
	line := fmt.Sprintf("%s %s of instances the spec no longer has (%s)", verb, human.Plural(g.Orphaned, "outcome"), human.Bytes(g.OrphanedB))
	if len(g.OrphanInstances) > 0 {
		line += ": " + strings.Join(g.OrphanInstances, ", ")
	}
	fmt.Fprintln(env.stdout, line)
	if !*yes {
		if g.Rows() == 0 {
			return nil
		}
		// Deleted answers cost a request each to get back: never on a typo.
		return &exitError{code: exitFailure, err: errors.New("nothing deleted; add --yes to delete these")}
	}
	return store.CollectGarbage(keep, before)
}
