package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// launchedRecords is how many prompts the launched-endpoint tests answer.
const launchedRecords = 24

// launchedSpec writes, in a directory of its own, a pipeline whose
// endpoint eaglet launches: two replicas of the real `eaglet sim-server`,
// decoding at speed tokens/s per sequence (0: at once), each logging the
// requests it receives.
func launchedSpec(t *testing.T, bin string, speed int) (dir, spec string) {
	t.Helper()
	dir = t.TempDir()
	chatPrompts(t, dir, launchedRecords, "chat.jsonl")
	spec = writeLaunchedSpec(t, dir, "launched", fmt.Sprintf(`
      argv: [%q, sim-server, -addr, "127.0.0.1:{port}", -log-requests, -speed, "%d"]
      replicas: 2
      grace: 2s`, bin, speed))
	return dir, spec
}

// writeLaunchedSpec writes dir/spec.yaml: load, generate and merge of
// dir/data/chat.jsonl, over an endpoint whose launch: mapping holds launch
// (its lines, each indented six spaces).
func writeLaunchedSpec(t *testing.T, dir, name, launch string) string {
	t.Helper()
	spec := filepath.Join(dir, "spec.yaml")
	src := `version: 1
name: ` + name + `
state: state.db
datasets:
  chat: {source: data/chat.jsonl, format: messages}
endpoints:
  target:
    api: openai
    model: sim
    concurrency: 4
    launch:` + launch + `
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {endpoint: target, max_tokens: 48}}
  - {name: merge, uses: merge, needs: [generate], with: {out: train.jsonl}}
`
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// requestsTo counts the generation requests each replica's server logged
// receiving, over every server the replica had (none before its log is
// made).
func requestsTo(dir string) [2]int {
	var n [2]int
	for i := range n {
		log := readFile(filepath.Join(dir, "servers", fmt.Sprintf("target-%d.log", i)))
		n[i] = strings.Count(log, "request POST /v1/chat/completions")
	}
	return n
}

var startedPID = regexp.MustCompile(`target replica (\d+): started \(pid (\d+)`)

// serverPIDs are the servers a run's log says it started, by replica.
func serverPIDs(log string) map[int][]int {
	pids := map[int][]int{}
	for _, m := range startedPID.FindAllStringSubmatch(log, -1) {
		r, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		pids[r] = append(pids[r], pid)
	}
	return pids
}

// noServerLeft fails the test for every server of log still running a few
// seconds on, and kills it.
func noServerLeft(t *testing.T, log string) {
	t.Helper()
	for r, pids := range serverPIDs(log) {
		for _, pid := range pids {
			for i := 0; alive(pid) && i < 250; i++ {
				time.Sleep(20 * time.Millisecond)
			}
			if alive(pid) {
				t.Errorf("replica %d's server (pid %d) still running", r, pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// TestRun_LaunchedEndpoint launches `eaglet sim-server` as the endpoint's
// two replicas. Undisturbed, the run answers every record once, over both
// replicas, and leaves no server running; its rerun reuses every answer
// and starts no server. A replica killed mid-run is restarted, only the
// requests it had in flight are asked again, and the output is
// byte-equal to the undisturbed run's. After eaglet itself is killed with
// SIGKILL no server is left (the kernel's parent-death signal), and the
// rerun completes with the same output.
func TestRun_LaunchedEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds eaglet and launches its sim-server")
	}
	bin := buildEaglet(t)

	dir, spec := launchedSpec(t, bin, 0)
	code, out := runBin(bin, "run", "--progress", "lines", spec)
	if code != 0 {
		t.Fatalf("run exited %d:\n%s", code, out)
	}
	want, err := os.ReadFile(filepath.Join(dir, "train.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(want, []byte("\n")); n != launchedRecords {
		t.Fatalf("train.jsonl has %d records, want %d", n, launchedRecords)
	}
	asked := requestsTo(dir)
	if asked[0]+asked[1] != launchedRecords || asked[0] == 0 || asked[1] == 0 {
		t.Errorf("replicas received %v requests; want %d in all, on both", asked, launchedRecords)
	}
	if !regexp.MustCompile(`launching target: 2 replicas of eaglet`).MatchString(out) ||
		!regexp.MustCompile(`target: 2 replicas ready in \S+ at http://127\.0\.0\.1:\d+/v1, http://127\.0\.0\.1:\d+/v1`).MatchString(out) {
		t.Errorf("the run did not say it launched the servers:\n%s", out)
	}
	// The last instance using the servers stops them, before the merge.
	if stopped, merge := strings.Index(out, "target: stopped; 2 replicas up"), strings.Index(out, "merge: started"); stopped < 0 || stopped > merge {
		t.Errorf("the servers were not stopped once generate was done, before the merge:\n%s", out)
	}
	noServerLeft(t, out)
	code, out = runBin(bin, "run", "--progress", "lines", spec)
	if code != 0 || strings.Contains(out, "launching") || requestsTo(dir) != asked {
		t.Errorf("the rerun (exit %d) launched servers or sent requests:\n%s", code, out)
	}
	// Under another dataset name every record is a new instance's, and
	// each answer is found again by its content: still nothing to send.
	os.WriteFile(spec, bytes.ReplaceAll(must(os.ReadFile(spec)), []byte("chat:"), []byte("renamed:")), 0o644)
	code, out = runBin(bin, "run", "--progress", "lines", spec)
	if code != 0 || !strings.Contains(out, "generate[renamed]") || strings.Contains(out, "launching") || requestsTo(dir) != asked {
		t.Errorf("the run under a new dataset name (exit %d) launched servers or sent requests:\n%s", code, out)
	}

	t.Run("replica killed", func(t *testing.T) {
		dir, spec := launchedSpec(t, bin, 150)
		cmd, log := startBin(t, bin, filepath.Join(dir, "run.log"), "run", "--progress", "lines", spec)
		// Kill replica 1 once it has answered some and holds some more.
		until(func() bool { return len(serverPIDs(log())[1]) == 1 && requestsTo(dir)[1] >= 4 })
		pids := serverPIDs(log())[1]
		if len(pids) != 1 {
			t.Fatalf("replica 1 did not start once and answer:\n%s", log())
		}
		syscall.Kill(pids[0], syscall.SIGKILL)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("run: %v:\n%s", err, log())
		}
		out := log()
		if !strings.Contains(out, "target replica 1: restarted, ready in") || len(serverPIDs(out)[1]) != 2 {
			t.Fatalf("replica 1 was not killed once and restarted:\n%s", out)
		}
		got, err := os.ReadFile(filepath.Join(dir, "train.jsonl"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("train.jsonl differs from the undisturbed run's (%v)", err)
		}
		// The run's concurrency, 4, bounds what was in flight at the kill.
		if asked := requestsTo(dir); asked[0]+asked[1] < launchedRecords || asked[0]+asked[1] > launchedRecords+4 {
			t.Errorf("replicas received %v requests; want %d and what was in flight, at most 4 more", asked, launchedRecords)
		}
		noServerLeft(t, out)
	})

	t.Run("eaglet killed", func(t *testing.T) {
		dir, spec := launchedSpec(t, bin, 150)
		cmd, log := startBin(t, bin, filepath.Join(dir, "run.log"), "run", "--progress", "lines", spec)
		until(func() bool { asked := requestsTo(dir); return asked[0]+asked[1] >= 6 })
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		killed := log()
		if len(serverPIDs(killed)) != 2 {
			t.Fatalf("the servers had not started when eaglet was killed:\n%s", killed)
		}
		noServerLeft(t, killed)
		code, out := runBin(bin, "run", "--progress", "lines", spec)
		if code != 0 {
			t.Fatalf("the rerun exited %d:\n%s", code, out)
		}
		if got, err := os.ReadFile(filepath.Join(dir, "train.jsonl")); err != nil || !bytes.Equal(got, want) {
			t.Errorf("train.jsonl after the rerun differs from the undisturbed run's (%v)", err)
		}
		noServerLeft(t, out)
	})
}

// startBin starts bin with args, its output going to the file at path,
// and returns the command and a function reading that output so far.
func startBin(t *testing.T, bin, path string, args ...string) (*exec.Cmd, func() string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, func() string { return readFile(path) }
}

// until polls cond until it holds, for 20 s at most.
func until(cond func() bool) {
	for deadline := time.Now().Add(20 * time.Second); !cond() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestPlan_Launches: plan shows each launch (replicas, program, GPUs,
// start-up once a launch measured it) and what the servers' time would
// cost; with nothing to send it launches nothing. validate reports a
// launch's problems at their lines.
func TestPlan_Launches(t *testing.T) {
	dir := t.TempDir()
	chatPrompts(t, dir, 10, "chat.jsonl")
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(`version: 1
name: launched
state: state.db
datasets:
  chat: {source: data/chat.jsonl, format: messages, est_completion_tokens: 360}
endpoints:
  target:
    api: sglang
    tokens_per_second: 1
    launch:
      argv: [python3, -m, sglang.launch_server, --model-path, "${MODEL_PATH}", --port, "{port}", --tp, "4"]
      replicas: 2
      gpus: 8
      gpu_hour_price: 2.5
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 1000}}
`), 0o644)
	vars := map[string]string{"MODEL_PATH": "/models/qwen"}
	code, out, errs := eagletEnv(vars, "plan", spec)
	// 10 answers of 360 tokens at 1 token/s: an hour, on 2 x 4 GPUs.
	want := "launches:\n  target: 2 replicas of python3, 4 GPUs each; start-up not measured yet; up about 1h0m0s this run, 8.0 GPU-hours, $20.00 at $2.50 per GPU-hour\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("plan (exit %d) does not show\n%s\nin:\n%s%s", code, want, out, errs)
	}
	os.MkdirAll(filepath.Join(dir, "servers"), 0o755)
	os.WriteFile(filepath.Join(dir, "servers", "target.json"), []byte(`{"start_up_seconds": 754.2}`), 0o644)
	if _, out, _ := eagletEnv(vars, "plan", spec); !strings.Contains(out, "start-up 12m34s at the last launch; up about 1h12m34s this run") {
		t.Errorf("plan does not count the last launch's start-up:\n%s", out)
	}

	os.WriteFile(spec, bytes.Replace(must(os.ReadFile(spec)), []byte(`"{port}"`), []byte(`"{prot}"`), 1), 0o644)
	code, _, errs = eagletEnv(vars, "validate", spec)
	if want := "spec.yaml:11:88: endpoint target: launch.argv.6: unknown placeholder {prot}"; code != exitSpec || !strings.Contains(errs, want) {
		t.Errorf("validate (exit %d) does not report %q:\n%s", code, want, errs)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestRun_LaunchedReplicaHung: a launched replica whose health answers but
// whose generations hang (its first server runs with -hang-all) is found
// by the watchdog, restarted as an exited one is, and the run finishes
// with every record answered once, equal to a run no replica hung in.
func TestRun_LaunchedReplicaHung(t *testing.T) {
	if testing.Short() {
		t.Skip("builds eaglet, launches its sim-server, and waits out the watchdog's 20 s")
	}
	t.Parallel() // it mostly waits
	bin := buildEaglet(t)
	_, good := launchedSpec(t, bin, 0)
	if code, out := runBin(bin, "run", good); code != 0 {
		t.Fatalf("undisturbed run exited %d:\n%s", code, out)
	}
	dir, spec := launchedSpec(t, bin, 0)
	// Replica 0's first server hangs; the one its restart starts does not.
	// The shell is the test's: eaglet itself runs argv without one. At 20
	// tokens/s the run outlasts the watchdog's 20 s, so the restarted
	// replica serves again.
	script := fmt.Sprintf(`flags="-addr 127.0.0.1:$1 -log-requests -speed 20"; if [ "$2" = 0 ] && [ ! -e %q ]; then touch %q; flags="$flags -hang-all"; fi; exec %q sim-server $flags`,
		filepath.Join(dir, "hung-once"), filepath.Join(dir, "hung-once"), bin)
	src := strings.Replace(string(must(os.ReadFile(spec))),
		fmt.Sprintf("argv: [%q, sim-server, -addr, \"127.0.0.1:{port}\", -log-requests, -speed, \"0\"]", bin),
		fmt.Sprintf("argv: [sh, -c, %q, sh, \"{port}\", \"{replica}\"]", script), 1)
	if !strings.Contains(src, "argv: [sh") {
		t.Fatalf("the spec's argv was not replaced:\n%s", src)
	}
	os.WriteFile(spec, []byte(src), 0o644)
	code, out := runBin(bin, "run", "--progress", "lines", spec)
	if code != 0 {
		t.Fatalf("run exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "out of service") || !regexp.MustCompile(`target replica 0: restart 1 of \d+`).MatchString(out) ||
		!strings.Contains(out, "target replica 0: restarted") {
		t.Errorf("the hung replica was not taken out and restarted:\n%s", out)
	}
	got, want := readFile(filepath.Join(dir, "train.jsonl")), readFile(filepath.Join(filepath.Dir(good), "train.jsonl"))
	if got != want || strings.Count(got, "\n") != launchedRecords {
		t.Errorf("train.jsonl differs from the undisturbed run's (%d and %d lines)", strings.Count(got, "\n"), strings.Count(want, "\n"))
	}
	noServerLeft(t, out)
}

// runLaunchedWith runs launchedSpec's pipeline with old in its spec
// replaced by new, failing the test unless the run succeeds.
func runLaunchedWith(t *testing.T, speed int, old, new string) (dir, bin, spec, out string) {
	t.Helper()
	bin = buildEaglet(t)
	dir, spec = launchedSpec(t, bin, speed)
	os.WriteFile(spec, []byte(strings.Replace(readFile(spec), old, new, 1)), 0o644)
	code, out := runBin(bin, "run", "--progress", "lines", spec)
	if code != 0 {
		t.Fatalf("run exited %d:\n%s", code, out)
	}
	return dir, bin, spec, out
}

// TestRun_LaunchedAutoReadsMetrics has concurrency: auto read the load
// metrics of the sim-servers eaglet launches, with no metrics URL in the
// spec: they are where the replicas came up.
func TestRun_LaunchedAutoReadsMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds eaglet and launches its sim-server")
	}
	dir, _, _, out := runLaunchedWith(t, 200, "concurrency: 4", "concurrency: auto")
	if !regexp.MustCompile(`endpoint target: reading server load from http://127\.0\.0\.1:\d+/metrics, http://127\.0\.0\.1:\d+/metrics`).MatchString(out) {
		t.Errorf("auto read no launched replica's metrics:\n%s", out)
	}
	if n := strings.Count(readFile(filepath.Join(dir, "train.jsonl")), "\n"); n != launchedRecords {
		t.Errorf("train.jsonl has %d records, want %d", n, launchedRecords)
	}
	noServerLeft(t, out)
}

// launchedLine is the line status and the summary give a launched
// endpoint whose two replicas stopped with the run.
var launchedLine = regexp.MustCompile(`(?m)^ *launched target: replica 0 stopped, up \d+s; replica 1 stopped, up \d+s; \d+\.\d\d GPU-hours \(\$\d+\.\d\d\)$`)

// TestStatus_LaunchedReplicas: the summary and `eaglet status` show each
// launched replica's state, uptime and the GPU-hours at gpu_hour_price,
// status --json the same as data, the report a table; a rerun that
// launches nothing leaves its summary without the line and status with
// the last launch's.
func TestStatus_LaunchedReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds eaglet and launches its sim-server")
	}
	dir, bin, spec, out := runLaunchedWith(t, 0, "grace: 2s", "grace: 2s\n      gpu_hour_price: 2.5")
	if !launchedLine.MatchString(out) {
		t.Errorf("the summary has no line of the launched replicas:\n%s", out)
	}
	if code, out := runBin(bin, "run", spec); code != 0 || launchedLine.MatchString(out) {
		t.Errorf("rerun launching nothing exited %d, its summary with the last launch's line:\n%s", code, out)
	}
	if html := readFile(filepath.Join(dir, "report.html")); !strings.Contains(html, `<tr data-endpoint="target"><th>target</th><td>1</td><td>stopped</td>`) {
		t.Error("the report has no row of replica 1")
	}
	if _, out = runBin(bin, "status", spec); !launchedLine.MatchString(out) {
		t.Errorf("status has no line of the launched replicas:\n%s", out)
	}
	_, out = runBin(bin, "status", "--json", spec)
	var st struct {
		Launched []struct {
			Endpoint string
			Replicas []struct {
				State         string
				UptimeSeconds float64 `json:"uptime_seconds"`
			}
			GPUHours float64 `json:"gpu_hours"`
			Dollars  float64
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(st.Launched) != 1 || st.Launched[0].Endpoint != "target" || len(st.Launched[0].Replicas) != 2 ||
		st.Launched[0].Replicas[0].State != "stopped" || st.Launched[0].Replicas[0].UptimeSeconds <= 0 ||
		st.Launched[0].Dollars != st.Launched[0].GPUHours*2.5 {
		t.Errorf("status --json launched: %+v", st.Launched)
	}
}
