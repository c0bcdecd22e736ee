package launch

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/specs"
)

// Options is the `run:` mapping of a stage that launches a command per
// shard, decoded from the stage's `with:` like any other option. The command
// and its outputs are part of the stage's fingerprint, so editing them runs
// the stage, which then relaunches the shards whose command changed; how
// the commands are run (concurrency, interrupts, environment) is not.
type Options struct {
	// Argv is the command and its arguments, one item each, run without a
	// shell; items may hold placeholders ({shard}, {index}, ...).
	Argv []string `yaml:"argv"`
	// Concurrency is how many shards' commands run at once (default 1).
	Concurrency int `yaml:"concurrency" fp:"-"`
	// Outputs is a glob (with placeholders) of the files a shard's command
	// writes; a command that exits 0 without writing a match has failed,
	// and a shard whose files are gone is launched again.
	Outputs string `yaml:"outputs"`
	// OnInterrupt is what Ctrl-C does to running commands: "stop" (the
	// default: SIGTERM to each command's process group, SIGKILL after
	// Grace) or "wait" (let them finish and record them).
	OnInterrupt string `yaml:"on_interrupt" fp:"-"`
	// Grace is how long a stopped command has between SIGTERM and SIGKILL,
	// as a Go duration (default 30s).
	Grace string `yaml:"grace" fp:"-"`
	// Env adds variables (values may hold placeholders) to the environment
	// the commands inherit. It is never stored or logged, so secrets belong
	// here rather than in Argv.
	Env map[string]string `yaml:"env" fp:"-"`
}

// Interrupt policies of Options.OnInterrupt.
const (
	Stop = "stop"
	Wait = "wait"
)

const defaultGrace = 30 * time.Second

// Check validates the options found under path in the stage's `with:` (for
// example "run") of a stage of spec, returning every problem at once, each
// a *specs.Error at the value it rejects.
func (o *Options) Check(spec *specs.Spec, st *specs.Stage, path ...string) error {
	var errs *multierror.Error
	at := func(p ...string) specs.Pos { return st.OptionPos(append(slices.Clone(path), p...)...) }
	keyAt := func(p ...string) specs.Pos { return st.OptionKeyPos(append(slices.Clone(path), p...)...) }
	name := strings.Join(path, ".")
	if name != "" {
		name += "."
	}
	bad := func(pos specs.Pos, format string, args ...any) {
		errs = multierror.Append(errs, &specs.Error{Pos: pos, Msg: fmt.Sprintf("stage %s: %s", st.Name, fmt.Sprintf(format, args...))})
	}
	check := func(pos specs.Pos, what, tmpl string) {
		if _, err := expand(tmpl, checkVals); err != nil {
			bad(pos, "%s%s: %v", name, what, err)
		}
	}
	switch {
	case len(o.Argv) == 0 && !st.Written(append(slices.Clone(path), "argv")...):
		bad(at(), "%s needs `argv:`, the command and its arguments as a list: [torchrun, --nproc_per_node, \"8\", ...]", strings.TrimSuffix(name, "."))
	case len(o.Argv) == 0:
		bad(at("argv"), "%sargv is empty; give the command and its arguments as a list: [torchrun, --nproc_per_node, \"8\", ...]", name)
	case strings.TrimSpace(o.Argv[0]) == "":
		bad(at("argv", "0"), "%sargv[0] is empty; it is the program to run", name)
	case strings.ContainsAny(o.Argv[0], " \t") && len(o.Argv) == 1:
		// at argv itself: a lone string decodes as a one-item list.
		bad(at("argv"), "%sargv %q is one item with spaces, but no shell splits it: write each argument as its own list item", name, o.Argv[0])
	}
	perShard := false
	for i, a := range o.Argv {
		check(at("argv", strconv.Itoa(i)), fmt.Sprintf("argv[%d]", i), a)
		perShard = perShard || mentionsShard(a)
	}
	for _, k := range sortedKeys(o.Env) {
		if !envName.MatchString(k) {
			bad(keyAt("env", k), "%senv: %q is not a variable name (letters, digits and _, not starting with a digit)", name, k)
		}
		check(at("env", k), "env "+k, o.Env[k])
		perShard = perShard || mentionsShard(o.Env[k])
	}
	if len(o.Argv) > 0 && !perShard {
		bad(at("argv"), "%sargv names no shard, so every shard would run the same command: use {shard} (its file), {index} or {version}", name)
	}
	if o.Outputs != "" {
		check(at("outputs"), "outputs", o.Outputs)
		if g, err := expand(o.Outputs, checkVals); err == nil {
			if _, err := filepath.Match(g, ""); err != nil {
				bad(at("outputs"), "%soutputs %q is not a glob: %v", name, o.Outputs, err)
			}
		}
		if msg := outputsProblem(spec, o.Outputs); msg != "" {
			bad(at("outputs"), "%soutputs %q %s", name, o.Outputs, msg)
		}
	}
	if o.Concurrency < 0 || o.Concurrency > specs.MaxConcurrency {
		bad(at("concurrency"), "%sconcurrency is %d; use 1 to %d (default 1)", name, o.Concurrency, specs.MaxConcurrency)
	}
	if o.OnInterrupt != "" && o.OnInterrupt != Stop && o.OnInterrupt != Wait {
		bad(at("on_interrupt"), "%son_interrupt is %q; use stop (SIGTERM, then SIGKILL after grace) or wait (let running shards finish)", name, o.OnInterrupt)
	}
	if o.Grace != "" {
		if d, err := time.ParseDuration(o.Grace); err != nil || d < 0 {
			bad(at("grace"), "%sgrace %q is not a duration like 30s or 2m", name, o.Grace)
		}
	}
	return errs.ErrorOrNil()
}

// inside stands, in outputsProblem, for the spec's directory, where the
// placeholders naming eaglet's own files point.
const inside = "/eaglet-spec-dir"

// outputsProblem says what is wrong with an outputs glob that Glob would
// take, or "": a ** (which matches one directory level, not any number),
// or files outside the spec's directory that the spec may not reach. The
// glob is read with {out}, {manifest} and {shard} inside the directory, as
// the checks of those files make them.
func outputsProblem(spec *specs.Spec, tmpl string) string {
	if strings.Contains(tmpl, "**") {
		return "has **, which a glob here reads as * (one directory level): name each level, as in {out}/hidden_states/*/*.ckpt"
	}
	if spec.AllowOutside {
		return ""
	}
	vals := maps.Clone(checkVals)
	for _, p := range []string{"out", "manifest", "shard"} {
		vals[p] = inside + "/" + p
	}
	g, err := expand(tmpl, vals)
	if err != nil {
		return ""
	}
	root := inside
	if filepath.IsAbs(g) && !strings.HasPrefix(g, inside+"/") {
		if root, err = filepath.Abs(filepath.Dir(spec.Path)); err != nil {
			return ""
		}
	} else if !filepath.IsAbs(g) {
		g = filepath.Join(inside, g)
	}
	if rel, err := filepath.Rel(root, filepath.Clean(g)); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return "reaches outside the spec's directory, where the command's outputs would be counted from files it did not write; keep it inside (under {out}), or set `allow_outside: true` at the top of the spec if this spec may reach there"
}

// checkVals fills every placeholder, so expand fails only on unknown ones.
var checkVals = func() map[string]string {
	m := map[string]string{}
	for _, p := range Placeholders {
		m[p] = "x"
	}
	return m
}()

// mentionsShard reports whether a template differs from one shard to the next.
func mentionsShard(tmpl string) bool {
	vals := map[string]string{}
	for _, p := range Placeholders {
		vals[p] = ""
	}
	a, _ := expand(tmpl, vals)
	vals["shard"], vals["index"], vals["version"] = "s", "i", "v"
	b, _ := expand(tmpl, vals)
	return a != b
}

func (o *Options) concurrency() int { return max(o.Concurrency, 1) }

func (o *Options) grace() time.Duration {
	if d, err := time.ParseDuration(o.Grace); err == nil {
		return d
	}
	return defaultGrace
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// envName is an environment variable's name as a shell takes it.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
