package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/outfile"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

// checkOutputs refuses files that two things would write or that a stage
// would write over something the run depends on: two merges with one out
// leave only the records of whichever finished last, and a merge writing
// the state store or a dataset's source destroys its own input. Unless the
// spec allows it, every file the run writes must be inside the spec's
// directory: a spec from a colleague or a repository is input too, and
// `out: ../../.bashrc` must not pass.
func checkOutputs(spec *specs.Spec, compiled map[string]*Stage) *multierror.Error {
	var errs *multierror.Error
	if err := checkInside(spec, spec.State); err != nil {
		errs = multierror.Append(errs, spec.WithSnippet(&specs.Error{Pos: spec.StatePos, Msg: fmt.Sprintf("state %s %v", spec.State, err)}))
	}
	// Absolute: the state path is kept relative to the working directory,
	// resolved paths are absolute, and the two must compare.
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return filepath.Clean(p)
	}
	owner := map[string]string{abs(spec.State): "the state store"}
	for _, ds := range spec.Datasets {
		if ds.Source != "" {
			owner[abs(spec.Resolve(ds.Source))] = fmt.Sprintf("the source of dataset %s", ds.Name)
		}
	}
	for _, st := range spec.Stages {
		cs := compiled[st.Name]
		if cs == nil {
			continue
		}
		var files []stages.WrittenFile
		if fw, ok := cs.Options.(stages.FileWriter); ok {
			option, path, overwrite := fw.WritesFile()
			files = append(files, stages.WrittenFile{Option: []string{option}, Path: path, Overwrite: overwrite})
		}
		if mw, ok := cs.Options.(stages.MoreFilesWriter); ok {
			files = append(files, mw.WritesMoreFiles()...)
		}
		for _, f := range files {
			if err := checkOutput(spec, st, f, abs(spec.Resolve(f.Path)), owner); err != nil {
				errs = multierror.Append(errs, spec.WithSnippet(err))
			}
		}
	}
	return errs
}

// checkOutput checks one file a stage writes, and claims it in owner.
func checkOutput(spec *specs.Spec, st *specs.Stage, f stages.WrittenFile, file string, owner map[string]string) error {
	if f.Path == "" {
		return nil
	}
	option := strings.Join(f.Option, ".")
	pos := st.OptionPos(f.Option...)
	if err := checkInside(spec, file); err != nil {
		return &specs.Error{Pos: pos, Msg: fmt.Sprintf("stage %s: %s %s %v", st.Name, option, f.Path, err)}
	}
	if prev, taken := owner[file]; taken {
		return &specs.Error{Pos: pos, Msg: fmt.Sprintf("stage %s: %s %s is %s; write it elsewhere", st.Name, option, f.Path, prev)}
	}
	owner[file] = fmt.Sprintf("also written by stage %s (line %d)", st.Name, st.Pos.Line)
	if !f.Overwrite {
		// Found now rather than after hours of generation.
		if err := outfile.Check(file); err != nil {
			return &specs.Error{Pos: pos, Msg: fmt.Sprintf("stage %s: %v; move it away, choose another %s, or set `overwrite: true` in the stage's options to replace it (it is then kept as %s%s)", st.Name, err, option, filepath.Base(f.Path), outfile.PrevSuffix)}
		}
	}
	return nil
}

// checkInside returns an error when path (resolved against the spec) is
// outside the spec's directory and the spec does not allow that. Symbolic
// links are followed as far as the path exists, so a link inside the
// directory pointing out of it counts as outside.
func checkInside(spec *specs.Spec, path string) error {
	if spec.AllowOutside {
		return nil
	}
	dir, err := realPath(filepath.Dir(spec.Path))
	if err != nil {
		return err
	}
	real, err := realPath(path)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, real)
	if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	return fmt.Errorf("is outside the spec's directory (it is %s, the spec is in %s); write inside it, or set `allow_outside: true` at the top of the spec (or pass --allow-outside) if this spec may write there", real, dir)
}

// realPath makes path absolute with every symbolic link of its existing
// part resolved; the part that does not exist yet is kept as written.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(p) == p {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}
