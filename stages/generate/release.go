package generate

import "github.com/eaglet-dev/eaglet/specs"

// Release tells the endpoint this instance is done with it in the run,
// so the last instance using servers eaglet launched stops them, and
// keeps what the servers did for status.
func (g *Generate) Release() {
	g.ep.Release()
	g.keepReplicas()
}

// endpointUsers counts the instances of the spec's generate stages that
// send to endpoint name.
func endpointUsers(spec *specs.Spec, name string) int {
	n := 0
	for _, st := range spec.Stages {
		if st.Uses != "generate" {
			continue
		}
		var o struct {
			Endpoint string `yaml:"endpoint"`
		}
		// The stage reports its own options' errors.
		_ = spec.Decode(st.With, &o)
		if o.Endpoint == "" && len(spec.Endpoints) == 1 {
			o.Endpoint = spec.Endpoints[0].Name
		}
		switch {
		case o.Endpoint != name:
		case st.Foreach == "datasets":
			n += len(spec.Datasets)
		default:
			n++
		}
	}
	return n
}
