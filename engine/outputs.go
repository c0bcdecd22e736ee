package engine

import (
	"fmt"
	"path/filepath"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

// checkOutputs refuses files that two things would write or that a stage
// would write over something the run depends on: two merges with one out
// leave only the records of whichever finished last, and a merge writing
// the state store or a dataset's source destroys its own input.
func checkOutputs(spec *specs.Spec, compiled map[string]*Stage) *multierror.Error {
	var errs *multierror.Error
	owner := map[string]string{filepath.Clean(spec.State): "the state store"}
	for _, ds := range spec.Datasets {
		if ds.Source != "" {
			owner[filepath.Clean(spec.Resolve(ds.Source))] = fmt.Sprintf("the source of dataset %s", ds.Name)
		}
	}
	for _, st := range spec.Stages {
		cs := compiled[st.Name]
		if cs == nil {
			continue
		}
		fw, ok := cs.Options.(stages.FileWriter)
		if !ok {
			continue
		}
		option, path := fw.WritesFile()
		if path == "" {
			continue
		}
		abs := filepath.Clean(spec.Resolve(path))
		if prev, taken := owner[abs]; taken {
			errs = multierror.Append(errs, spec.WithSnippet(&specs.Error{Pos: st.OptionPos(option),
				Msg: fmt.Sprintf("stage %s: %s %s is %s; write it elsewhere", st.Name, option, path, prev)}))
			continue
		}
		owner[abs] = fmt.Sprintf("also written by stage %s (line %d)", st.Name, st.Pos.Line)
	}
	return errs
}
