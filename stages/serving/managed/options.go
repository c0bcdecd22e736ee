// Package managed runs the servers of an endpoint that eaglet launches
// instead of being given URLs: its `launch:` options checked at their
// lines, the replicas started when the first request is about to go and
// stopped when the endpoint is done, a replica whose process exits
// restarted with backoff, and its URL swapped in and out of the
// endpoint's rotation meanwhile. internal/serve starts and stops them.
package managed

import (
	"errors"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/serve"
	"github.com/eaglet-dev/eaglet/specs"
)

func init() {
	specs.CheckOptions[Options]()
	specs.RegisterLaunch(check)
}

// Options are an endpoint's `launch:` mapping: the launcher's, and what
// eaglet does around it.
type Options struct {
	serve.Options `yaml:",inline"`
	// Restarts bounds how many times a replica whose process exits is
	// started again in one run.
	Restarts int `yaml:"restarts" default:"3" doc:"how many times a replica whose process exits is started again in one run, with backoff; its requests go to the others meanwhile"`
	// GPUHourPrice prices the servers' time for plan.
	GPUHourPrice float64 `yaml:"gpu_hour_price" doc:"dollars per GPU-hour, for plan's cost of the servers' time (a job on a scheduler counts as one GPU)"`
}

// decode decodes and checks ep's `launch:`, every problem at once, each a
// *specs.Error at the key it is about. The options come back with their
// defaults filled for the keys the spec leaves out.
func decode(s *specs.Spec, ep *specs.Endpoint) (*Options, error) {
	o := new(Options)
	// What decodes is checked too: every problem is reported at once.
	var errs *multierror.Error
	if err := s.Decode(ep.Launch, o); err != nil {
		errs = multierror.Append(errs, err)
	}
	// An endpoint without an api is refused where it is declared.
	if ep.API != "" && ep.API != string(serve.SGLang) && ep.API != string(serve.OpenAI) {
		errs = multierror.Append(errs, s.Errorf(ep.KeyPos("launch"), "endpoint %s: api %s has no server to launch; launch an sglang or openai endpoint", ep.Name, ep.API))
	}
	o = specs.WithDefaults(o, ep.Launch)
	if o.Restarts < 0 {
		errs = multierror.Append(errs, s.Errorf(ep.LaunchKeyPos("restarts"), "endpoint %s: launch.restarts: %d is not a count; 0 restarts none", ep.Name, o.Restarts))
	}
	if o.GPUHourPrice < 0 {
		errs = multierror.Append(errs, s.Errorf(ep.LaunchKeyPos("gpu_hour_price"), "endpoint %s: launch.gpu_hour_price: %v dollars cannot be negative", ep.Name, o.GPUHourPrice))
	}
	if err := o.Options.Validate(ep.Launch); err != nil {
		errs = multierror.Append(errs, positioned(s, ep, err))
	} else if _, err := o.Shares(ep.Launch, nil); err != nil {
		// Devices that do not split among the replicas: known before
		// anything starts, from the options and CUDA_VISIBLE_DEVICES.
		errs = multierror.Append(errs, positioned(s, ep, err))
	}
	if errs != nil {
		errs.ErrorFormat = specs.FormatErrors
	}
	return o, errs.ErrorOrNil()
}

// check is the spec's check of every `launch:`.
func check(s *specs.Spec, ep *specs.Endpoint) error {
	_, err := decode(s, ep)
	return err
}

// positioned turns the launcher's option errors into spec errors at their
// keys, leaving any other error as it is.
func positioned(s *specs.Spec, ep *specs.Endpoint, err error) error {
	var me *multierror.Error
	if !errors.As(err, &me) {
		me = &multierror.Error{Errors: []error{err}}
	}
	var out *multierror.Error
	for _, e := range me.Errors {
		var oe *serve.OptionError
		if errors.As(e, &oe) {
			e = s.Errorf(ep.LaunchKeyPos(oe.Path...), "endpoint %s: %v", ep.Name, oe)
		}
		out = multierror.Append(out, e)
	}
	out.ErrorFormat = specs.FormatErrors
	return out
}
