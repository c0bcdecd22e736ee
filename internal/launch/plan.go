// Package launch starts a command per shard of a stage's output (a
// hidden-state extraction: torchrun, sbatch --wait, kubectl, ray job
// submit), with a concurrency limit, one log file per shard and each launch
// checkpointed beside the stage's records, so a rerun launches only the shards that
// did not finish, failed, or changed. Commands run in their own process
// group and get SIGTERM when eaglet dies (Linux); what of theirs outlives
// a killed eaglet carries its launch's tag and is stopped by the next run.
package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Shard is one unit of a launch: a file and the version of its content.
type Shard struct {
	// Index numbers the shard from 0; it keys the shard's launches.
	Index int
	// Path is the shard's file, {shard} in templates.
	Path string
	// Version hashes the shard's content: a new version is launched anew,
	// and the launch of the old one stays on record.
	Version string
	// Tokens is the shard's token count, for progress and estimates.
	Tokens int64
}

// Job is a command to launch over a set of shards.
type Job struct {
	// Instance names the stage instance in logs and errors.
	Instance string
	// Options are the validated `run:` options.
	Options *Options
	Shards  []Shard
	// Out and Manifest fill {out} and {manifest}.
	Out, Manifest string
	// LogDir receives one log file per shard, appended to at each launch.
	LogDir string
	// Dir is the commands' working directory and the base of a relative
	// outputs glob; "" is eaglet's own.
	Dir string
	// Redact scrubs secrets from what is logged, stored or hashed of a
	// command (nil leaves text as it is).
	Redact func(string) string
	// Log reports each launch and its end (nil: silent); it is called
	// from as many goroutines as shards run at once.
	Log func(format string, args ...any)
	// Force launches every shard, up to date or not (run --force: an
	// extraction script changed behind the same command line).
	Force bool
}

// Status is what became, or would become, of one shard.
type Status struct {
	Shard Shard
	// Launch is set when the shard is to be launched (Plan) or was
	// launched by this run (Run).
	Launch bool
	// Reason says why a shard is launched ("never launched", "version
	// changed", "last launch failed: exit status 1") or, from Run, why one
	// due was not ("not launched: interrupted"); empty when it is up to date.
	Reason string
	// Record is the stored launch of the shard's current version: the
	// last one before a Plan, the one this run made after a Run; nil when
	// there is none.
	Record *Record
}

// Plan says which shards a Run would launch and why, without launching:
// those never launched, changed (a new version or command), whose last
// launch failed or was cut short by a killed eaglet, or whose outputs are
// gone. It reads the instance's checkpoints, which may be a snapshot's,
// or nil when there is no store yet.
func Plan(cp Checkpoints, job *Job) ([]Status, error) {
	if err := job.validate(); err != nil {
		return nil, err
	}
	var stored []Record
	if cp != nil {
		var err error
		if stored, err = records(cp); err != nil {
			return nil, err
		}
	}
	type key struct {
		shard   int
		version string
	}
	byVersion := map[key]*Record{}
	versions := map[int][]string{}
	for i := range stored {
		l := &stored[i]
		byVersion[key{l.Shard, l.Version}] = l
		versions[l.Shard] = append(versions[l.Shard], l.Version)
	}
	out := make([]Status, len(job.Shards))
	for i, sh := range job.Shards {
		st := Status{Shard: sh, Record: byVersion[key{sh.Index, sh.Version}]}
		var err error
		if st.Reason, err = job.reason(sh, st.Record, versions[sh.Index]); err != nil {
			return nil, err
		}
		if st.Reason == "" && job.Force {
			st.Reason = "forced"
		}
		st.Launch = st.Reason != ""
		out[i] = st
	}
	return out, nil
}

// reason says why a shard with last as its stored launch must be launched,
// or "" when it is up to date.
func (j *Job) reason(sh Shard, last *Record, others []string) (string, error) {
	switch {
	case last == nil && len(others) > 0:
		return fmt.Sprintf("version changed (%s -> %s)", short(others[len(others)-1]), short(sh.Version)), nil
	case last == nil:
		return "never launched", nil
	case !last.Finished():
		return fmt.Sprintf("launched %s but eaglet stopped before it ended", last.StartedAt.Format("2006-01-02 15:04:05")), nil
	case !last.OK():
		return "last launch failed: " + last.Error, nil
	}
	argv, err := j.argv(sh)
	if err != nil {
		return "", err
	}
	if j.hash(argv) != last.ArgvHash {
		return "command changed", nil
	}
	if j.Options.Outputs != "" {
		found, err := j.outputs(sh)
		if err != nil {
			return "", err
		}
		if len(found) == 0 {
			return "outputs gone: nothing matches " + j.Options.Outputs, nil
		}
	}
	return "", nil
}

func (j *Job) validate() error {
	switch {
	case j.Options == nil || len(j.Options.Argv) == 0:
		return fmt.Errorf("launch %s: no command", j.Instance)
	case j.LogDir == "":
		return fmt.Errorf("launch %s: no log directory", j.Instance)
	}
	seen := map[int]bool{}
	for _, sh := range j.Shards {
		switch {
		case seen[sh.Index]:
			return fmt.Errorf("launch %s: shard %d appears twice", j.Instance, sh.Index)
		case sh.Version == "":
			return fmt.Errorf("launch %s: shard %d has no version", j.Instance, sh.Index)
		}
		seen[sh.Index] = true
	}
	return nil
}

// vals are the placeholder values of one shard.
func (j *Job) vals(sh Shard) map[string]string {
	return map[string]string{
		"shard":    sh.Path,
		"index":    strconv.Itoa(sh.Index),
		"count":    strconv.Itoa(len(j.Shards)),
		"out":      j.Out,
		"manifest": j.Manifest,
		"version":  sh.Version,
	}
}

// argv is the command of one shard.
func (j *Job) argv(sh Shard) ([]string, error) {
	vals := j.vals(sh)
	argv := make([]string, len(j.Options.Argv))
	for i, a := range j.Options.Argv {
		var err error
		if argv[i], err = expand(a, vals); err != nil {
			return nil, fmt.Errorf("launch %s: argv[%d]: %w", j.Instance, i, err)
		}
	}
	return argv, nil
}

// env is what the command of one shard adds to eaglet's environment.
func (j *Job) env(sh Shard) ([]string, error) {
	vals := j.vals(sh)
	var env []string
	for _, k := range sortedKeys(j.Options.Env) {
		v, err := expand(j.Options.Env[k], vals)
		if err != nil {
			return nil, fmt.Errorf("launch %s: env %s: %w", j.Instance, k, err)
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

// outputs returns the files of a shard that the outputs glob finds.
func (j *Job) outputs(sh Shard) ([]string, error) {
	pattern, err := expand(j.Options.Outputs, j.vals(sh))
	if err != nil {
		return nil, fmt.Errorf("launch %s: outputs: %w", j.Instance, err)
	}
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(j.Dir, pattern)
	}
	if pattern, err = filepath.Abs(pattern); err != nil {
		return nil, err
	}
	found, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("launch %s: outputs %s: %w", j.Instance, pattern, err)
	}
	return found, nil
}

// hash identifies a command as run. It hashes the command with secrets
// scrubbed, so that no secret reaches the store, even hashed, and a rotated
// token does not relaunch every shard.
func (j *Job) hash(argv []string) string {
	h := sha256.Sum256([]byte(j.redact(strings.Join(argv, "\x00"))))
	return hex.EncodeToString(h[:8])
}

func (j *Job) redact(s string) string {
	if j.Redact == nil {
		return s
	}
	return j.Redact(s)
}

func (j *Job) log(format string, args ...any) {
	if j.Log != nil {
		j.Log("%s", j.redact(fmt.Sprintf(format, args...)))
	}
}

func short(version string) string {
	if len(version) > 12 {
		return version[:12]
	}
	return version
}
