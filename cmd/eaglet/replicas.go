package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/internal/report"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/endpoint"
	"github.com/eaglet-dev/eaglet/stages/serving/managed"
	"github.com/eaglet-dev/eaglet/state"
)

// launchedFigures reads what the servers eaglet launched did, as the
// instances of p that send to an endpoint kept it at or after since (zero: the last run
// that launched them); nil without a store.
func launchedFigures(p *engine.Pipeline, store *state.Store, since time.Time) ([]managed.Figures, error) {
	if store == nil {
		return nil, nil
	}
	var cps []stages.Checkpoints
	for _, n := range p.Nodes {
		_, one := n.Stage.Options.(stages.EndpointUser)
		if _, several := n.Stage.Options.(stages.EndpointsUser); one || several {
			cps = append(cps, store.Checkpoints(n.ID))
		}
	}
	return endpoint.Replicas(cps, since)
}

// reportLaunched is figs as the report shows them.
func reportLaunched(figs []managed.Figures) []report.Launched {
	var out []report.Launched
	for _, f := range figs {
		l := report.Launched{Endpoint: f.Endpoint, GPUHours: f.GPUHours, Dollars: f.Dollars}
		for _, r := range f.Replicas {
			l.Replicas = append(l.Replicas, report.Replica{Index: r.Replica, State: r.State, Restarts: r.Restarts,
				Uptime: time.Duration(r.UptimeSeconds * float64(time.Second)).Round(time.Second)})
		}
		out = append(out, l)
	}
	return out
}

// printReplicas writes one line per launched endpoint: each replica's
// state, restarts and uptime, and the GPU-hours (and dollars) in all.
func printReplicas(w io.Writer, indent string, figs []managed.Figures) {
	for _, f := range figs {
		var reps []string
		for _, r := range f.Replicas {
			s := fmt.Sprintf("%d %s, up %s", r.Replica, r.State, duration(r.UptimeSeconds))
			if r.Restarts > 0 {
				s += ", " + human.Plural(r.Restarts, "restart")
			}
			reps = append(reps, s)
		}
		line := fmt.Sprintf("%slaunched %s: replica %s; %.2f GPU-hours", indent, f.Endpoint, strings.Join(reps, "; replica "), f.GPUHours)
		if f.Dollars > 0 {
			line += fmt.Sprintf(" ($%.2f)", f.Dollars)
		}
		fmt.Fprintln(w, line)
	}
}
