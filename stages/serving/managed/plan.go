package managed

import (
	"path/filepath"
	"time"

	"github.com/eaglet-dev/eaglet/specs"
)

// Plan is what a run would launch for one endpoint and what the servers'
// time would cost, for `eaglet plan`.
type Plan struct {
	Endpoint string
	Replicas int
	// Program is the command the servers are started (or submitted) with,
	// argv[0] without its directory.
	Program string
	// GPUs is each replica's share of the devices (0: none given, or a
	// job, whose scheduler assigns them).
	GPUs int
	// StartUp is how long the last launch took to answer; Measured is
	// false before any launch, and then StartUp is 0.
	StartUp  time.Duration
	Measured bool
	// Sends is set when the run would send the endpoint anything: it
	// launches nothing otherwise.
	Sends bool
	// Hours is how long the servers would be up, start-up included, when
	// the generation time is known (0 when it is not); GPUHours is that
	// times the GPUs of every replica, a replica with none counting as one.
	Hours, GPUHours float64
	// Price is the launch's gpu_hour_price, Dollars the GPU-hours at it.
	Price, Dollars float64
}

// PlanFor plans endpoint ep's launch for a run whose instances would
// generate for seconds in all at the endpoint's stated throughput (0:
// unknown), sends saying whether they would send anything.
func PlanFor(s *specs.Spec, ep *specs.Endpoint, seconds float64, sends bool) (*Plan, error) {
	o, err := decode(s, ep)
	if err != nil {
		return nil, err
	}
	p := &Plan{Endpoint: ep.Name, Replicas: o.Replicas, Program: filepath.Base(o.Argv[0]), Sends: sends, Price: o.GPUHourPrice}
	if shares, err := o.Shares(ep.Launch, nil); err == nil && len(shares) > 0 {
		p.GPUs = len(shares[0])
	}
	if r, ok := lastLaunch(logDir(s), ep.Name); ok {
		p.StartUp, p.Measured = time.Duration(r.StartUpSeconds*float64(time.Second)), true
	}
	if sends && seconds > 0 {
		p.Hours = (seconds + p.StartUp.Seconds()) / 3600
		p.GPUHours = p.Hours * float64(p.Replicas*max(p.GPUs, 1))
		p.Dollars = p.GPUHours * p.Price
	}
	return p, nil
}
