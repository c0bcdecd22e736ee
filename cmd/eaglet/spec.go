package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/specs"
	_ "github.com/eaglet-dev/eaglet/stages/all" // every built-in stage kind
	"github.com/eaglet-dev/eaglet/state"
)

// lookup reads an environment variable through the command's environment.
func (e *cmdEnv) lookup(name string) (string, bool) {
	if e.lookupEnv != nil {
		return e.lookupEnv(name)
	}
	v := e.getenv(name)
	return v, v != ""
}

// newFlags returns a flag set that reports to stderr and shows usage.
func newFlags(env *cmdEnv, name, args, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "usage: eaglet %s %s\n\n%s\n", name, args, summary)
		if hasFlags(fs) {
			fmt.Fprintln(env.stderr, "\nflags:")
			fs.PrintDefaults()
		}
		if ex := commands[name].examples; len(ex) > 0 {
			fmt.Fprintln(env.stderr, "\nexamples:")
			for _, e := range ex {
				fmt.Fprintf(env.stderr, "\n  # %s\n  $ %s\n", e.about, e.line)
			}
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// specArgs is what every command that reads a spec takes.
type specArgs struct {
	path string
	// allowOutside lets the spec write outside its directory, as
	// `allow_outside: true` in the spec does.
	allowOutside bool
}

// parseSpecArgs parses flags (which may follow the spec path) and returns
// the one spec path, adding the flags common to every spec command.
func parseSpecArgs(fs *flag.FlagSet, args []string) (specArgs, error) {
	allow := fs.Bool("allow-outside", false, "let the spec write its outputs and state outside the spec's directory")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return specArgs{}, &exitError{code: exitOK, err: errors.New("")}
			}
			return specArgs{}, &exitError{code: exitUsage, err: errors.New("")}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 1 {
		fs.Usage()
		return specArgs{}, &exitError{code: exitUsage, err: fmt.Errorf("expected one spec file, got %d arguments", len(pos))}
	}
	return specArgs{path: pos[0], allowOutside: *allow}, nil
}

// loadPipeline validates and compiles a spec; problems exit with exitSpec.
func loadPipeline(env *cmdEnv, a specArgs) (*engine.Pipeline, error) {
	var opts []engine.LoadOption
	if a.allowOutside {
		opts = append(opts, engine.AllowOutside())
	}
	p, err := engine.Load(a.path, env.lookup, opts...)
	if err != nil {
		if _, statErr := os.Stat(a.path); statErr != nil {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("spec %s: %w", a.path, statErr)}
		}
		fmt.Fprintln(env.stderr, err)
		return nil, &exitError{code: exitSpec, err: errors.New("")}
	}
	// From here on the command prints what the spec holds (paths, errors
	// quoting them, the final error in runMain): all of it passes through
	// Redact, so no output path can show a secret's value.
	env.stdout = p.Spec.NewRedactWriter(env.stdout)
	env.stderr = p.Spec.NewRedactWriter(env.stderr)
	return p, nil
}

// specFromArgs parses a command's flags and arguments and loads its spec.
func specFromArgs(env *cmdEnv, fs *flag.FlagSet, args []string) (*engine.Pipeline, error) {
	a, err := parseSpecArgs(fs, args)
	if err != nil {
		return nil, err
	}
	return loadPipeline(env, a)
}

// specAndStore is specFromArgs plus the spec's store, opened only if a run
// created it (nil otherwise); close it with closeStore.
func specAndStore(env *cmdEnv, fs *flag.FlagSet, args []string) (*engine.Pipeline, *state.Store, error) {
	p, err := specFromArgs(env, fs, args)
	if err != nil {
		return nil, nil, err
	}
	store, err := openExisting(p)
	return p, store, err
}

func closeStore(s *state.Store) {
	if s != nil {
		s.Close()
	}
}

// openExisting opens the pipeline's store if a run has created it, else nil.
func openExisting(p *engine.Pipeline) (*state.Store, error) {
	if !state.Exists(p.Spec.State) {
		return nil, nil
	}
	return openStore(p.Spec.State)
}

// openLocked opens the pipeline's store for a command that changes it,
// taking it from any run; nil when no run has created it.
func openLocked(p *engine.Pipeline) (*state.Store, error) {
	store, err := openExisting(p)
	if store == nil || err != nil {
		return nil, err
	}
	if err := store.Lock(); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// isTerminal reports whether w is a character device (a person watching).
func isTerminal(w any) bool {
	if rw, ok := w.(*specs.RedactWriter); ok {
		w = rw.W
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
