package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/managed"
)

// launchPlans plans every launched endpoint of the spec for the run the
// steps make: the generation time of the steps that send to it.
func launchPlans(p *engine.Pipeline, steps []*engine.Step) []*managed.Plan {
	var plans []*managed.Plan
	for _, ep := range p.Spec.Endpoints {
		if ep.Launch == nil {
			continue
		}
		seconds, sends := 0.0, false
		for _, s := range steps {
			opts := s.Node.Stage.Options
			if !stages.SendsTo(p.Spec, opts, ep.Name) || !s.Runs() || s.Todo == 0 {
				continue
			}
			share := 1.0
			if o, ok := opts.(stages.EndpointsUser); ok {
				// A stage sending to several endpoints (evaluate, a
				// server per drafter) is taken to spend its time evenly.
				share = 1 / float64(len(o.EndpointNames()))
			}
			seconds, sends = seconds+share*s.Estimate.Seconds, true
		}
		// An invalid launch is the spec's error, reported with it.
		if lp, err := managed.PlanFor(p.Spec, ep, seconds, sends); err == nil {
			plans = append(plans, lp)
		}
	}
	return plans
}

// printLaunches writes what the run would launch and what the servers'
// time would cost.
func printLaunches(w io.Writer, plans []*managed.Plan) {
	if len(plans) == 0 {
		return
	}
	fmt.Fprintln(w, "\nlaunches:")
	for _, lp := range plans {
		what := fmt.Sprintf("%s of %s", human.Plural(lp.Replicas, "replica"), lp.Program)
		if lp.GPUs > 0 {
			what += fmt.Sprintf(", %s each", human.Plural(lp.GPUs, "GPU"))
		}
		parts := []string{what}
		if lp.Measured {
			// A small model is up in a second, a large one in many minutes.
			took := lp.StartUp.Round(time.Second)
			if lp.StartUp < time.Minute {
				took = lp.StartUp.Round(100 * time.Millisecond)
			}
			parts = append(parts, fmt.Sprintf("start-up %s at the last launch", took))
		} else {
			parts = append(parts, "start-up not measured yet")
		}
		switch {
		case !lp.Sends:
			parts = append(parts, "not launched: nothing to send")
		case lp.Hours == 0:
			parts = append(parts, "time unknown: give the endpoint's tokens_per_second")
		default:
			up := fmt.Sprintf("up about %s this run, %.1f GPU-hours", duration(lp.Hours*3600), lp.GPUHours)
			if lp.Price > 0 {
				up += fmt.Sprintf(", $%.2f at $%.2f per GPU-hour", lp.Dollars, lp.Price)
			}
			parts = append(parts, up)
		}
		fmt.Fprintf(w, "  %s: %s\n", lp.Endpoint, strings.Join(parts, "; "))
	}
}
