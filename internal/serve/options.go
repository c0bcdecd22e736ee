package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"

	"github.com/eaglet-dev/eaglet/specs"
)

// Options is an endpoint's `launch:` mapping: how its servers are started,
// found and stopped. The spec layer decodes it like any other option and
// fills the `default` tags; Start fills them too, for callers that build
// Options by hand.
type Options struct {
	Argv []string `yaml:"argv" doc:"the server's command, one item per argument, run without a shell; on a scheduler, the command that submits the job"`
	// Replicas is how many servers to start.
	Replicas int `yaml:"replicas" default:"1" doc:"how many servers to start, each with its own {port}, {replica} and {gpus}"`
	// GPUs are the devices the local replicas share.
	GPUs Devices `yaml:"gpus" doc:"the devices the replicas share, a list ([0, 1, 2, 3]) or a count (8); default: CUDA_VISIBLE_DEVICES"`
	// GPUsPerReplica is each replica's share of GPUs; 0 splits them evenly.
	GPUsPerReplica int `yaml:"gpus_per_replica" doc:"how many devices each replica gets (default: an even split)"`
	// Scheduler is local, slurm, kubernetes or ray; empty picks it from Argv[0].
	Scheduler string `yaml:"scheduler" doc:"local, slurm, kubernetes or ray (default: slurm for sbatch, kubernetes for kubectl, ray for ray, else local)"`
	// JobID finds the job id in the submit's output.
	JobID string `yaml:"job_id" doc:"a regular expression finding the job id in the submit's output, its first group if it has one (default per scheduler)"`
	// Stop cancels a job.
	Stop []string `yaml:"stop" doc:"the command that cancels a job, with {job_id} (default: scancel, kubectl delete job or ray job stop)"`
	// Address is where a job serves when it does not write {address_file}.
	Address string `yaml:"address" doc:"a job's URL or host:port, with {job_id} and {replica}, for jobs that do not write it to {address_file}"`
	// Log is a job's own output, whose tail a failure shows.
	Log string `yaml:"log" doc:"the file a job's output goes to, with {job_id} and {replica} (slurm-{job_id}.out), whose last lines a failure shows"`
	// ReadyTimeout bounds a replica's start, from launch to answering.
	ReadyTimeout string `yaml:"ready_timeout" default:"30m" doc:"how long a replica may take from launch (and a job from submit) to answering, as a Go duration"`
	// Grace is how long a stopped server has between SIGTERM and SIGKILL.
	Grace string `yaml:"grace" default:"30s" doc:"how long a stopped local server has between SIGTERM and SIGKILL (a job's stop command gets a minute more)"`
	// Keep leaves the servers up when the group is closed or its context ends.
	Keep bool `yaml:"keep" doc:"leave the servers up at the end (and when eaglet dies) to reuse them"`
}

// Schedulers, as Options.Scheduler names them.
const (
	Local      = "local"
	Slurm      = "slurm"
	Kubernetes = "kubernetes"
	Ray        = "ray"
)

// schedulerDefaults are what a scheduler's jobs use unless the options say
// otherwise: the program that submits (to recognize the scheduler from
// argv), the job id in the submit's output, and the command that cancels.
var schedulerDefaults = map[string]struct {
	submit string
	jobID  string
	stop   []string
}{
	Slurm:      {"sbatch", `Submitted batch job (\d+)`, []string{"scancel", "{job_id}"}},
	Kubernetes: {"kubectl", `job\.batch/(\S+) created`, []string{"kubectl", "delete", "job", "{job_id}"}},
	Ray:        {"ray", `raysubmit_\w+`, []string{"ray", "job", "stop", "{job_id}"}},
}

// Placeholders each template may hold, in braces.
var (
	localPlaceholders  = []string{"port", "replica", "gpus"}
	submitPlaceholders = []string{"replica", "address_file"}
	jobPlaceholders    = []string{"job_id", "replica"}
)

// Devices are GPU ids. In YAML they are a list ([0, 1]), a count (8, for
// devices 0 to 7) or a comma-separated string, as CUDA_VISIBLE_DEVICES.
type Devices []string

// UnmarshalYAML decodes a list, a count or a comma-separated string.
func (d *Devices) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var ids []string
		if err := n.Decode(&ids); err != nil {
			return err
		}
		*d = ids
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("gpus: want a list of device ids or a count, not a mapping")
	}
	if count, err := strconv.Atoi(n.Value); err == nil {
		if count < 0 {
			return fmt.Errorf("gpus: %d is not a device count", count)
		}
		*d = countDevices(count)
		return nil
	}
	*d = parseDevices(n.Value)
	return nil
}

func countDevices(n int) Devices {
	d := make(Devices, n)
	for i := range d {
		d[i] = strconv.Itoa(i)
	}
	return d
}

// parseDevices reads a CUDA_VISIBLE_DEVICES value.
func parseDevices(s string) Devices {
	var d Devices
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			d = append(d, f)
		}
	}
	return d
}

// OptionError is one invalid launch option. Path names it as the spec
// writes it under `launch:` ("argv", "0"), so the spec layer can point at
// its line.
type OptionError struct {
	Path []string
	Msg  string
}

func (e *OptionError) Error() string { return "launch." + strings.Join(e.Path, ".") + ": " + e.Msg }

// settings are Options checked and resolved, with every default filled.
type settings struct {
	Options
	readyTimeout, grace time.Duration
	jobID               *regexp.Regexp
}

// scheduled reports whether replicas are jobs of a scheduler.
func (s *settings) scheduled() bool { return s.Scheduler != Local }

// Validate checks the options, defaults filled, and returns every problem
// at once, each an *OptionError. written is the launch mapping as the spec
// wrote it, so only the keys it leaves out take defaults (nil: options
// built in Go, whose zero fields do).
func (o *Options) Validate(written *yaml.Node) error {
	_, err := o.resolve(written)
	return err
}

func (o *Options) resolve(written *yaml.Node) (*settings, error) {
	s := &settings{Options: *specs.WithDefaults(o, written)}
	var errs *multierror.Error
	bad := func(msg string, path ...string) {
		errs = multierror.Append(errs, &OptionError{Path: path, Msg: msg})
		errs.ErrorFormat = listed("problems")
	}
	if len(s.Argv) == 0 || strings.TrimSpace(s.Argv[0]) == "" {
		bad("no command: give the server's command and its arguments as a list, [python3, -m, sglang.launch_server, --port, \"{port}\", ...]", "argv")
		return s, errs.ErrorOrNil()
	}
	if s.Scheduler == "" {
		s.Scheduler = Local
		for name, d := range schedulerDefaults {
			if filepath.Base(s.Argv[0]) == d.submit {
				s.Scheduler = name
			}
		}
	}
	d, known := schedulerDefaults[s.Scheduler]
	if !known && s.Scheduler != Local {
		// What else is wrong depends on what the command is.
		bad(fmt.Sprintf("unknown scheduler %q%s; schedulers: local, slurm, kubernetes, ray",
			s.Scheduler, specs.Suggest(s.Scheduler, []string{Local, Slurm, Kubernetes, Ray})), "scheduler")
		return s, errs.ErrorOrNil()
	}
	if s.Replicas < 1 {
		bad(fmt.Sprintf("%d replicas: start at least 1", s.Replicas), "replicas")
	}
	if s.GPUsPerReplica < 0 {
		bad(fmt.Sprintf("%d devices per replica is not a count", s.GPUsPerReplica), "gpus_per_replica")
	}
	var err error
	if s.readyTimeout, err = time.ParseDuration(s.ReadyTimeout); err != nil || s.readyTimeout <= 0 {
		bad(fmt.Sprintf("%q is not a positive duration like 90s or 45m", s.ReadyTimeout), "ready_timeout")
	}
	if s.grace, err = time.ParseDuration(s.Grace); err != nil || s.grace < 0 {
		bad(fmt.Sprintf("%q is not a duration like 30s", s.Grace), "grace")
	}
	check := func(item string, names []string, path ...string) {
		if _, err := expand(item, placeholderCheck(names)); err != nil {
			bad(err.Error(), path...)
		}
	}
	checkAll := func(items []string, names []string, key string) {
		for i, item := range items {
			check(item, names, key, strconv.Itoa(i))
		}
	}
	const assigned = "a scheduler assigns a job's devices: ask for them in the job (--gres, nvidia.com/gpu, --entrypoint-num-gpus)"
	if s.scheduled() {
		for i, a := range s.Argv {
			switch {
			case strings.Contains(a, "{port}"):
				bad("{port} is a free port on this machine, not on the job's node: a job reports where it serves by writing {address_file} (or give address)", "argv", strconv.Itoa(i))
			case strings.Contains(a, "{gpus}"):
				bad(assigned, "argv", strconv.Itoa(i))
			default:
				check(a, submitPlaceholders, "argv", strconv.Itoa(i))
			}
		}
		if len(s.GPUs) > 0 || s.GPUsPerReplica > 0 {
			bad(assigned, "gpus")
		}
		if s.JobID == "" {
			s.JobID = d.jobID
		}
		if s.jobID, err = regexp.Compile(s.JobID); err != nil {
			bad(fmt.Sprintf("not a regular expression: %v", err), "job_id")
		}
		if s.Stop == nil {
			s.Stop = d.stop
		}
		if len(s.Stop) == 0 || s.Stop[0] == "" {
			bad("no command: give the command that cancels a job, [scancel, \"{job_id}\"]", "stop")
		}
		checkAll(s.Stop, jobPlaceholders, "stop")
		check(s.Address, jobPlaceholders, "address")
		check(s.Log, jobPlaceholders, "log")
		return s, errs.ErrorOrNil()
	}
	checkAll(s.Argv, localPlaceholders, "argv")
	if !slices.ContainsFunc(s.Argv, func(a string) bool { return strings.Contains(a, "{port}") }) {
		bad("no {port}: each replica must listen on the free port eaglet picks for it (--port \"{port}\")", "argv")
	}
	for _, o := range []struct {
		key string
		set bool
	}{{"job_id", s.JobID != ""}, {"stop", s.Stop != nil}, {"address", s.Address != ""}, {"log", s.Log != ""}} {
		if o.set {
			bad("applies to a scheduler's jobs, and these servers are local (argv[0] is not sbatch, kubectl or ray; set scheduler if it submits)", o.key)
		}
	}
	return s, errs.ErrorOrNil()
}

// Shares are the devices each local replica gets, by index, as Start
// gives them (none to a job, whose scheduler assigns them), with the
// problem when they do not split; environ is the commands' environment,
// for CUDA_VISIBLE_DEVICES (nil: eaglet's own). written is as for
// Validate.
func (o *Options) Shares(written *yaml.Node, environ []string) ([]Devices, error) {
	s, err := o.resolve(written)
	if err != nil {
		return nil, err
	}
	if s.scheduled() {
		return make([]Devices, s.Replicas), nil
	}
	if environ == nil {
		environ = os.Environ()
	}
	return s.shares(environ)
}

// shares splits the devices among the replicas: devices from the options,
// else from CUDA_VISIBLE_DEVICES in environ. No devices at all is no
// share, and then argv may not ask for {gpus}.
func (s *settings) shares(environ []string) ([]Devices, error) {
	devices := s.GPUs
	from := "gpus"
	if len(devices) == 0 {
		devices, from = parseDevices(getenv(environ, "CUDA_VISIBLE_DEVICES")), "CUDA_VISIBLE_DEVICES"
	}
	out := make([]Devices, s.Replicas)
	if len(devices) == 0 {
		if slices.ContainsFunc(s.Argv, func(a string) bool { return strings.Contains(a, "{gpus}") }) {
			return nil, &OptionError{Path: []string{"gpus"}, Msg: "argv asks for {gpus} but there are no devices to share: set gpus or CUDA_VISIBLE_DEVICES"}
		}
		return out, nil
	}
	per := s.GPUsPerReplica
	if per == 0 {
		if len(devices)%s.Replicas != 0 {
			return nil, &OptionError{Path: []string{"gpus_per_replica"}, Msg: fmt.Sprintf("%d devices (%s) do not split evenly among %d replicas: set gpus_per_replica",
				len(devices), from, s.Replicas)}
		}
		per = len(devices) / s.Replicas
	}
	if per*s.Replicas > len(devices) {
		return nil, &OptionError{Path: []string{"gpus_per_replica"}, Msg: fmt.Sprintf("%d replicas of %d devices need %d, and %s has %d",
			s.Replicas, per, per*s.Replicas, from, len(devices))}
	}
	for i := range out {
		out[i] = devices[i*per : (i+1)*per]
	}
	return out, nil
}

// getenv is the last value of key in environ, as exec gives it to a child.
func getenv(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
