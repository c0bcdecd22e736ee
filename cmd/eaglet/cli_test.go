package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/state"
)

// quickSpec writes an instant version of the quickstart into a temp dir.
func quickSpec(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../specs/examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := filepath.Abs("../../specs/examples/data")
	spec := strings.ReplaceAll(string(src), "source: data/", "source: "+data+"/")
	spec = strings.ReplaceAll(spec, "speed: 4000", "speed: 0")
	path := filepath.Join(t.TempDir(), "q.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func eaglet(args ...string) (code int, stdout, stderr string) {
	return eagletEnv(nil, args...)
}

// eagletEnv runs eaglet with vars as its whole environment.
func eagletEnv(vars map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	env := &cmdEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(k string) string { v, _ := lookup(k); return v }, lookupEnv: lookup}
	code = runMain(env, args)
	return code, out.String(), errb.String()
}

func TestCLI_Lifecycle(t *testing.T) {
	spec := quickSpec(t)
	steps := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"validate", spec}, exitOK, "ok (3 datasets, 5 stages, 13 instances)"},
		{[]string{"status", spec}, exitOK, "has not run yet"},
		{[]string{"plan", "--detailed-exitcode", spec}, exitChanges, "about 102k completion tokens"},
		{[]string{"status", spec}, exitOK, "has not run yet (" + filepath.Join(filepath.Dir(spec), "runs/quickstart/state.db") + " holds only what `eaglet plan` saved)"},
		{[]string{"run", "--stage", "cap", spec}, exitOK, "6 instances ran"},
		{[]string{"plan", spec}, exitOK, "cap[chat]        120 "},
		{[]string{"run", spec}, exitOK, "7 instances ran, 6 were up to date"},
		{[]string{"run", spec}, exitOK, "everything is up to date (13 instances)"},
		{[]string{"plan", "--detailed-exitcode", spec}, exitOK, "everything is up to date"},
		{[]string{"plan", "--stage", "generate", "--dataset", "chat", "--force", "--detailed-exitcode", spec}, exitChanges, "will rerun: forced"},
		{[]string{"plan", "--stage", "generate", "--dataset", "chat", spec}, exitOK, "all of it is up to date; `eaglet run` with these flags would do nothing"},
		{[]string{"plan", "--force", spec}, exitUsage, "--dataset and --force need --stage"},
		{[]string{"run", "--stage", "filter", "--dataset", "chat", "--force", spec}, exitOK, "filter[chat]: finished"},
		{[]string{"reset", "--stage", "generate", "--dataset", "tools", spec}, exitFailure, "would forget generate[tools] (70 done"},
		{[]string{"reset", "--stage", "generate", "--dataset", "tools", "--yes", spec}, exitOK, "forgot filter[tools]"},
		{[]string{"plan", spec}, exitOK, "generate[tools]  ~70      -           10.5k"},
		{[]string{"graph", spec}, exitOK, "cap --> generate"},
		{[]string{"graph", "--format", "dot", "--instances", spec}, exitOK, `"generate[chat]" -> "filter[chat]";`},
		{[]string{"run", "--dataset", "chat", spec}, exitUsage, "--dataset and --force need --stage"},
		{[]string{"run", "--stage", "nope", spec}, exitUsage, `no stage "nope"`},
	}
	for _, s := range steps {
		code, out, errOut := eaglet(s.args...)
		if code != s.code || !strings.Contains(out+errOut, s.contains) {
			t.Fatalf("eaglet %s: exit %d, want %d with %q in output:\n%s%s", strings.Join(s.args, " "), code, s.code, s.contains, out, errOut)
		}
		if strings.Join(s.args, " ") == "plan --stage generate --dataset chat "+spec {
			// Only what that run would touch: not the other datasets'.
			if strings.Contains(out, "generate[tools]") || !strings.Contains(out, "load[chat]") {
				t.Errorf("plan --stage generate --dataset chat lists other instances, or not what it needs:\n%s", out)
			}
		}
	}
	code, out, _ := eaglet("status", "--json", spec)
	var st struct {
		Instances []instanceStatus `json:"instances"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json: exit %d, output %s", code, out)
	}
	for _, in := range st.Instances {
		if in.Instance == "cap[chat]" && (in.Done != 120 || in.Dropped != 20 || in.Reasons["dropped: over max_samples"] != 20) {
			t.Errorf("status of cap[chat] = %+v; want 120 done, 20 dropped over max_samples", in)
		}
		if in.Instance == "generate[tools]" && in.State != "not run" {
			t.Errorf("generate[tools] is %q after reset; want not run", in.State)
		}
	}
}

// statusOf reads `status --json`: every instance, and each one's state by id.
func statusOf(t *testing.T, spec string) ([]instanceStatus, map[string]string) {
	t.Helper()
	_, out, _ := eaglet("status", "--json", spec)
	var st struct{ Instances []instanceStatus }
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	states := map[string]string{}
	for _, in := range st.Instances {
		states[in.Instance] = string(in.State)
	}
	return st.Instances, states
}

// cutShort runs the quickstart and then marks generate[chat] as a run
// leaves it while it works: running. It returns the store, still open.
func cutShort(t *testing.T, spec string) *state.Store {
	t.Helper()
	if code, _, errOut := eaglet("run", spec); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	store, err := state.Open(filepath.Join(filepath.Dir(spec), "runs/quickstart/state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	in, _ := store.GetInstance("generate[chat]")
	in.Status = "running"
	if err := store.PutInstance(in); err != nil {
		t.Fatal(err)
	}
	return store
}

func TestCLI_StatusMarksStaleDownstream(t *testing.T) {
	spec := quickSpec(t)
	// A later run of generate[chat] was cut short: what filter[chat]
	// holds is no longer final.
	cutShort(t, spec)
	_, states := statusOf(t, spec)
	if states["generate[chat]"] != "incomplete" || states["filter[chat]"] != "stale" || states["merge"] != "stale" || states["filter[code]"] != "done" {
		t.Errorf("states %v; want generate[chat] incomplete, filter[chat] and merge stale, filter[code] done", states)
	}
}

// TestCLI_StatusDuringARun: while a run holds the store, status says its
// instances are running and names the run's pid, not incomplete.
func TestCLI_StatusDuringARun(t *testing.T) {
	spec := quickSpec(t)
	store := cutShort(t, spec)
	if err := store.Lock(); err != nil {
		t.Fatal(err)
	}
	_, states := statusOf(t, spec)
	if states["generate[chat]"] != "running" {
		t.Errorf("generate[chat] is %q while a run holds the store; want running", states["generate[chat]"])
	}
	_, out, _ := eaglet("status", spec)
	if want := fmt.Sprintf("a run is in progress (pid %d)", os.Getpid()); !strings.Contains(out, want) {
		t.Errorf("status lacks %q:\n%s", want, out)
	}
}

// TestCLI_PlanAfterBudgetRun: once a run has spent a budget, the records it
// skipped are no change for --detailed-exitcode until the budget is raised.
func TestCLI_PlanAfterBudgetRun(t *testing.T) {
	path := quickSpec(t)
	src, _ := os.ReadFile(path)
	withBudget := func(tokens string) {
		spec := strings.Replace(string(src), "temperature: 0.7}", "temperature: 0.7, budget: {completion_tokens: "+tokens+"}}", 1)
		os.WriteFile(path, []byte(spec), 0o644)
	}
	steps := []struct {
		args     []string
		budget   string
		code     int
		contains string
	}{
		{[]string{"run", path}, "20_000", exitOK, "skipped: budget"},
		{[]string{"plan", "--detailed-exitcode", path}, "20_000", exitOK, "records skipped for budget; raise the budget to continue"},
		// The run agrees with the plan: nothing to do.
		{[]string{"run", path}, "20_000", exitOK, "everything is up to date"},
		{[]string{"plan", "--detailed-exitcode", path}, "30_000", exitChanges, "(the budget allows "},
		// The first run's answers measured the pace: the time is priced
		// at it, not at the spec's tokens_per_second.
		{[]string{"plan", path}, "30_000", exitOK, "of generation at the pace the endpoints' answers came at so far ("},
	}
	for _, s := range steps {
		withBudget(s.budget)
		code, out, errOut := eaglet(s.args...)
		if code != s.code || !strings.Contains(out+errOut, s.contains) {
			t.Fatalf("eaglet %s with a budget of %s: exit %d, want %d with %q in output:\n%s%s", strings.Join(s.args, " "), s.budget, code, s.code, s.contains, out, errOut)
		}
	}
}

func TestCLI_InvalidSpec(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(path, []byte("version: 1\nname: x\nstagez: []\n"), 0o644)
	code, _, errOut := eaglet("validate", path)
	if code != exitSpec {
		t.Errorf("exit %d; want %d", code, exitSpec)
	}
	for _, want := range []string{path + `:3:1: unknown key "stagez" (did you mean "stages"?)`, "no stages", "2 problems"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("missing %q in:\n%s", want, errOut)
		}
	}
}

func TestCLI_InstanceErrorShowsSpecLine(t *testing.T) {
	path := quickSpec(t)
	src, _ := os.ReadFile(path)
	// 0 for tools, whose answers are estimated at 150 tokens; fine for the others.
	bad := strings.Replace(string(src), "max_tokens: 2048", `max_tokens: "dataset.est_completion_tokens - 150"`, 1)
	os.WriteFile(path, []byte(bad), 0o644)
	want := path + `:36:39: generate[tools]: max_tokens evaluates to 0; want at least 1
    |     with: {endpoint: sim, max_tokens: "dataset.est_completion_tokens - 150", temperature: 0.7}
    |                                       ^`
	for _, cmd := range []string{"validate", "plan"} {
		code, _, errOut := eaglet(cmd, path)
		if code != exitSpec || !strings.Contains(errOut, want) {
			t.Errorf("eaglet %s: exit %d, want %d with\n%s\nin:\n%s", cmd, code, exitSpec, want, errOut)
		}
		if strings.Contains(errOut, "generate[chat]") || strings.Contains(errOut, "generate[code]") {
			t.Errorf("eaglet %s reports an instance whose max_tokens is in range:\n%s", cmd, errOut)
		}
	}
}

func TestInspect_CountsDuplicates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.jsonl")
	row := `{"messages":[{"role":"user","content":"same"}]}` + "\n"
	os.WriteFile(path, []byte(row+row+`{"messages":[{"role":"user","content":"other"}]}`+"\n"), 0o644)
	code, out, _ := eaglet("inspect", "-json", path)
	var rep inspectReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("inspect: exit %d\n%s", code, out)
	}
	if rep.Records != 3 || rep.Duplicates != 1 {
		t.Errorf("inspect found %d records, %d duplicates; want 3 and 1", rep.Records, rep.Duplicates)
	}
}

// TestCLI_StatusShowsFailures: an instance whose records failed is not
// "done": some failed is partial, all failed is failed, and what is built
// on it is stale until a run retries them.
func TestCLI_StatusShowsFailures(t *testing.T) {
	spec := quickSpec(t)
	src, _ := os.ReadFile(spec)
	// A context window the longer prompts do not fit: those get a 400.
	os.WriteFile(spec, []byte(strings.Replace(string(src), "mean_tokens: 300,", "mean_tokens: 300, context: 400,", 1)), 0o644)
	if code, _, _ := eaglet("run", spec); code != exitFailure {
		t.Fatalf("run with failing records exited %d; want %d", code, exitFailure)
	}
	instances, states := statusOf(t, spec)
	failed := 0
	for _, in := range instances {
		if strings.HasPrefix(in.Instance, "generate[") && in.Failed > 0 {
			failed++
			if in.State != "partial" && in.State != "failed" {
				t.Errorf("%s has %d failed records but is %q", in.Instance, in.Failed, in.State)
			}
			if f := "filter[" + strings.TrimPrefix(in.Instance, "generate["); states[f] != "stale" {
				t.Errorf("%s is %q on top of %s; want stale", f, states[f], in.Instance)
			}
		}
	}
	// merge did not write over failed records: it never ran.
	if failed == 0 || states["merge"] != "waiting" {
		t.Errorf("states %v; want some generate partial or failed and merge waiting", states)
	}
}

func TestCLI_SecretsNeverPrinted(t *testing.T) {
	const secret = "hunter2secret"
	data, _ := filepath.Abs("../../specs/examples/data/chat.jsonl")
	// Each case puts the secret in a path that fails somewhere else: while
	// validating, opening the store, or writing the merged file.
	tests := []struct {
		name, state, source, out string
	}{
		{"missing source", "state.db", "${DATA_TOKEN}/chat.jsonl", "train.jsonl"},
		{"state store under a file", "blocker/${DATA_TOKEN}/state.db", data, "train.jsonl"},
		{"merge output under a file", "state.db", data, "blocker/${DATA_TOKEN}/train.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "blocker"), nil, 0o644)
			spec := fmt.Sprintf(`version: 1
name: secrets
state: "%s"
datasets:
  chat: {source: "%s", format: messages}
stages:
  - {name: load, uses: load, foreach: datasets, with: {limit: 5}}
  - {name: merge, uses: merge, needs: [load], with: {out: "%s"}}
`, tt.state, tt.source, tt.out)
			path := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
				t.Fatal(err)
			}
			var all strings.Builder
			for _, cmd := range []string{"validate", "plan", "run", "status", "graph"} {
				code, out, errOut := eagletEnv(map[string]string{"DATA_TOKEN": secret}, cmd, path)
				if strings.Contains(out+errOut, secret) {
					t.Errorf("eaglet %s (exit %d) printed the secret:\n%s%s", cmd, code, out, errOut)
				}
				all.WriteString(out + errOut)
			}
			// The failing path was printed, redacted: the case tested what it means to.
			if !strings.Contains(all.String(), "***/") {
				t.Errorf("no output shows the redacted path:\n%s", all.String())
			}
		})
	}
}

// TestCLI_SecretsNeverStored: a dataset under a directory named by a secret
// loads, but the secret reaches neither the state store nor the output.
func TestCLI_SecretsNeverStored(t *testing.T) {
	const secret = "hunter2secret"
	dir := t.TempDir()
	src, _ := os.ReadFile("../../specs/examples/data/chat.jsonl")
	os.MkdirAll(filepath.Join(dir, secret), 0o755)
	os.WriteFile(filepath.Join(dir, secret, "chat.jsonl"), src, 0o644)
	path := filepath.Join(dir, "s.yaml")
	os.WriteFile(path, []byte(`version: 1
name: secrets
state: state.db
datasets:
  chat: {source: "${DATA_TOKEN}/chat.jsonl", format: messages}
stages:
  - {name: load, uses: load, foreach: datasets, with: {limit: 5}}
  - {name: merge, uses: merge, needs: [load], with: {out: train.jsonl, format: record}}
`), 0o644)
	if code, _, errOut := eagletEnv(map[string]string{"DATA_TOKEN": secret}, "run", path); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	for _, f := range []string{"state.db", "state.db-wal", "train.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "train.jsonl")); !bytes.Contains(b, []byte(`***/chat.jsonl`)) {
		t.Errorf("train.jsonl does not name its source redacted:\n%.300s", b)
	}
}
