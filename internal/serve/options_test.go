package serve

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var sglangArgv = []string{"python3", "-m", "sglang.launch_server", "--model-path", "/models/qwen", "--port", "{port}", "--tp", "8"}

// TestOptions_Validate: every problem is reported at once, each at the
// key that has it.
func TestOptions_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want []string // "path: message part"
	}{
		{name: "issue's example", opts: Options{Argv: sglangArgv, Replicas: 2}},
		{name: "literal braces and ${VAR} pass", opts: Options{Argv: []string{"srv", "--port", "{port}", "--kwargs", `{"a": 1}`, "--x", "{{port}}", "${HOME}"}}},
		{name: "no argv", opts: Options{}, want: []string{"argv: no command"}},
		{name: "local mistakes", opts: Options{Argv: []string{"srv", "--port", "{prot}"}, Replicas: -1, GPUsPerReplica: -2,
			ReadyTimeout: "soon", Grace: "-1s", JobID: "x", Address: "h:1"},
			want: []string{"replicas: -1 replicas", "gpus_per_replica: -2", "ready_timeout: \"soon\"", "grace: \"-1s\"",
				"argv.2: unknown placeholder {prot} (did you mean \"port\"?)", "argv: no {port}", "job_id: applies to a scheduler's jobs", "address: applies"}},
		{name: "unknown scheduler", opts: Options{Argv: sglangArgv, Scheduler: "slrum"}, want: []string{"scheduler: unknown scheduler \"slrum\" (did you mean \"slurm\"?)"}},
		{name: "slurm", opts: Options{Argv: []string{"sbatch", "--export=ALL,ADDR={address_file}", "serve.sh", "{replica}"}}},
		{name: "scheduler mistakes", opts: Options{Argv: []string{"sbatch", "--port", "{port}", "{gpus}"}, GPUs: Devices{"0"}, JobID: "(",
			Stop: []string{}, Log: "{jobid}.out"},
			want: []string{"argv.2: {port} is a free port on this machine", "argv.3: a scheduler assigns", "gpus: a scheduler assigns",
				"job_id: not a regular expression", "stop: no command", "log: unknown placeholder {jobid} (did you mean \"job_id\"?)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate(nil)
			var got []string
			var me interface{ WrappedErrors() []error }
			if errors.As(err, &me) {
				for _, e := range me.WrappedErrors() {
					var oe *OptionError
					if !errors.As(e, &oe) {
						t.Errorf("%v: a %T, want an *OptionError", e, e)
					}
					got = append(got, strings.TrimPrefix(e.Error(), "launch."))
				}
			} else if err != nil {
				t.Fatalf("error %v (%T), want a list", err, err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors:\n  %s\nwant %d:\n  %s", strings.Join(got, "\n  "), len(tc.want), strings.Join(tc.want, "\n  "))
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
					t.Errorf("no error like %q in:\n  %s", w, strings.Join(got, "\n  "))
				}
			}
		})
	}
}

// TestOptions_SchedulerDefaults: the scheduler follows from the submit
// command, and its id pattern and stop command follow from it.
func TestOptions_SchedulerDefaults(t *testing.T) {
	for _, tc := range []struct {
		argv0, scheduler, jobID, stop string
	}{
		{"python3", Local, "", ""},
		{"/usr/bin/sbatch", Slurm, `Submitted batch job (\d+)`, "scancel {job_id}"},
		{"kubectl", Kubernetes, `job\.batch/(\S+) created`, "kubectl delete job {job_id}"},
		{"ray", Ray, `raysubmit_\w+`, "ray job stop {job_id}"},
	} {
		argv := []string{tc.argv0, "{replica}"}
		if tc.scheduler == Local {
			argv = append(argv, "{port}")
		}
		s, err := (&Options{Argv: argv}).resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.argv0, err)
		}
		if s.Scheduler != tc.scheduler || s.JobID != tc.jobID || strings.Join(s.Stop, " ") != tc.stop {
			t.Errorf("%s: scheduler %q, job_id %q, stop %q; want %q, %q, %q", tc.argv0, s.Scheduler, s.JobID, s.Stop, tc.scheduler, tc.jobID, tc.stop)
		}
		if s.Replicas != 1 || s.readyTimeout.Minutes() != 30 || s.grace.Seconds() != 30 {
			t.Errorf("%s: defaults %d replicas, ready_timeout %s, grace %s", tc.argv0, s.Replicas, s.readyTimeout, s.grace)
		}
	}
}

// TestSettings_Shares: replicas split the devices given, or those of
// CUDA_VISIBLE_DEVICES, in order.
func TestSettings_Shares(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gpus     Devices
		per      int
		replicas int
		argv     []string
		environ  []string
		want     string // shares joined by |
		err      string
	}{
		{name: "even split", gpus: Devices{"0", "1", "2", "3", "4", "5", "6", "7"}, replicas: 2, want: "0,1,2,3|4,5,6,7"},
		{name: "from the environment", environ: []string{"CUDA_VISIBLE_DEVICES=0,1", "CUDA_VISIBLE_DEVICES=2, 3"}, replicas: 2, want: "2|3"},
		{name: "per replica, some left", gpus: Devices{"0", "1", "2"}, per: 1, replicas: 2, want: "0|1"},
		{name: "uneven", gpus: Devices{"0", "1", "2"}, replicas: 2, err: "3 devices (gpus) do not split evenly among 2 replicas"},
		{name: "too few", environ: []string{"CUDA_VISIBLE_DEVICES=0,1,2"}, per: 2, replicas: 2, err: "2 replicas of 2 devices need 4, and CUDA_VISIBLE_DEVICES has 3"},
		{name: "none", replicas: 2, want: "|"},
		{name: "none but asked for", replicas: 1, argv: []string{"srv", "{port}", "{gpus}"}, err: "argv asks for {gpus}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &settings{Options: Options{Argv: cmpSlice(tc.argv, []string{"srv", "{port}"}), GPUs: tc.gpus, GPUsPerReplica: tc.per, Replicas: tc.replicas}}
			shares, err := s.shares(tc.environ)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(shares))
			for i, sh := range shares {
				got[i] = strings.Join(sh, ",")
			}
			if g := strings.Join(got, "|"); g != tc.want {
				t.Errorf("shares %q, want %q", g, tc.want)
			}
		})
	}
}

func cmpSlice(a, b []string) []string {
	if a != nil {
		return a
	}
	return b
}

// TestDevices_UnmarshalYAML: gpus is a list, a count or a
// CUDA_VISIBLE_DEVICES string.
func TestDevices_UnmarshalYAML(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "gpus: [0, 1, 5]", want: "0,1,5"},
		{in: "gpus: 4", want: "0,1,2,3"},
		{in: `gpus: "2,3"`, want: "2,3"},
		{in: "gpus: [GPU-8a1c, GPU-77f0]", want: "GPU-8a1c,GPU-77f0"},
		{in: "gpus: -1", err: "not a device count"},
		{in: "gpus: {a: 1}", err: "not a mapping"},
	} {
		var o Options
		err := yaml.Unmarshal([]byte(tc.in), &o)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(o.GPUs, ",") != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.in, o.GPUs, err, tc.want)
		}
	}
}

// TestExpand: only {name} is a placeholder; everything else with braces
// passes as written.
func TestExpand(t *testing.T) {
	vals := map[string]string{"port": "30001", "replica": "1"}
	for _, tc := range []struct{ in, want, err string }{
		{in: "--port={port}", want: "--port=30001"},
		{in: "{replica}-{port}", want: "1-30001"},
		{in: `{"port": {port}}`, want: `{"port": 30001}`},
		{in: "{{port}} {port}", want: "{port} 30001"},
		{in: "${MODEL_PATH}/{replica}", want: "${MODEL_PATH}/1"},
		{in: "{.status.podIP} {} { port }", want: "{.status.podIP} {} { port }"},
		{in: "{gpus}", err: "unknown placeholder {gpus}; placeholders: {port} {replica}"},
	} {
		got, err := expand(tc.in, vals)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
