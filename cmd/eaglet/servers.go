package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/stages/serving/managed"
)

func init() {
	register(command{
		name:    "servers",
		summary: "list (or stop) the launched servers a run left up: scheduler jobs and kept servers",
		run:     runServers,
		examples: []example{
			{"list what is still up for the spec's endpoints", "eaglet servers specs/examples/launched.yaml"},
			{"cancel those jobs and stop those servers", "eaglet servers --stop specs/examples/launched.yaml"},
		},
	})
}

func runServers(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "servers", "[--stop] [--allow-outside] SPEC",
		"Lists the servers of the spec's launched endpoints that runs recorded as started and did not\n"+
			"stop: scheduler jobs (which outlive a killed eaglet) and servers kept with launch.keep. The\n"+
			"next run adopts each that still answers; --stop cancels the jobs and stops the servers now.")
	stop := fs.Bool("stop", false, "stop them (cancel each job with launch.stop) and forget them")
	p, err := specFromArgs(env, fs, args)
	if err != nil {
		return err
	}
	open := openExisting
	if *stop {
		open = openLocked
	}
	store, err := open(p)
	if err != nil {
		return err
	}
	if store == nil {
		fmt.Fprintf(env.stdout, "no servers: %s has not run\n", p.Spec.Name)
		return nil
	}
	defer store.Close()
	ups, err := managed.Ups(ctx, p.Spec, store.RunCheckpoints())
	if err != nil {
		return err
	}
	if len(ups) == 0 {
		fmt.Fprintf(env.stdout, "no servers up for %s\n", p.Spec.Name)
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tREPLICA\tJOB/PID\tURL\tANSWERING\tSINCE")
	for _, u := range ups {
		answering := "yes"
		if u.Err != nil {
			answering = "no: " + u.Err.Error()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", u.Endpoint, u.Replica, jobOrPID(u), orDash(u.URL), answering,
			u.StartedAt.Local().Format(time.DateTime))
	}
	tw.Flush()
	if !*stop {
		return nil
	}
	var errs *multierror.Error
	for _, u := range ups {
		if err := u.Stop(); err != nil {
			errs = multierror.Append(errs, err)
			continue
		}
		fmt.Fprintf(env.stdout, "stopped %s replica %d (%s)\n", u.Endpoint, u.Replica, jobOrPID(u))
	}
	if err := errs.ErrorOrNil(); err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	return nil
}

// jobOrPID names what runs a replica: its job's id, or its process.
func jobOrPID(u *managed.Up) string {
	if u.JobID != "" {
		return "job " + u.JobID
	}
	return "pid " + strconv.Itoa(u.PID)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
