package endpoint

import (
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

// Shared returns the run's endpoint name, made by the first instance of
// any stage that asks for it: every instance sending to one endpoint
// shares its slots, its servers and their lifetime.
func Shared(inst *stages.Instance, name string) (*Endpoint, error) {
	v, err := inst.Shared.Get("endpoint:"+name, func() (any, error) {
		e, err := New(inst.Spec, inst.Spec.Endpoint(name), inst.Shared.Log)
		if err == nil {
			e.Users(users(inst.Spec, name))
			e.KeepJobs(inst.Shared.Checkpoints)
		}
		return e, err
	})
	if err != nil {
		return nil, err
	}
	return v.(*Endpoint), nil
}

// users counts the instances of the spec's stages that send to endpoint
// name, so that the last one's Release stops the servers eaglet launched.
func users(spec *specs.Spec, name string) int {
	n := 0
	for _, st := range spec.Stages {
		k, ok := stages.Lookup(st.Uses)
		if !ok {
			continue
		}
		opts := k.Options()
		// The stage reports its own options' errors.
		_ = spec.Decode(st.With, opts)
		switch {
		case !stages.SendsTo(spec, opts, name):
		case st.Foreach == "datasets":
			n += len(spec.Datasets)
		default:
			n++
		}
	}
	return n
}

// MetricsURLs returns where the endpoint's servers export their metrics
// now: a launched endpoint's replicas serve on ports known once they are
// up, and change with each restart.
func (e *Endpoint) MetricsURLs() []string {
	if e.launched != nil {
		return metricsURLs(e.launched.group.URLs())
	}
	return metricsURLs(e.Spec.URLs)
}
