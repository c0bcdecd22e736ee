package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/state"
)

// TestRun_AllShardsWithinConcurrency: every shard is launched once, never
// more than the concurrency at once. The shards launched together wait for
// each other (0 and 1, then 2 and 3), so two run at once however slowly a
// loaded machine starts them.
func TestRun_AllShardsWithinConcurrency(t *testing.T) {
	f := newFixture(t, 5, map[string]string{"FAKE_AWAIT": "0=started-1,1=started-0,2=started-3,3=started-2", "FAKE_SLEEP": "*=50ms"})
	f.job.Options.Concurrency = 2
	for _, st := range must(Plan(nil, f.job)) {
		if !st.Launch || st.Reason != "never launched" {
			t.Errorf("Plan without a store: shard %d: %+v", st.Shard.Index, st)
		}
	}
	statuses, err := Run(context.Background(), f.cp(), f.job)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.calls(t); !reflect.DeepEqual(got, []int{1, 1, 1, 1, 1}) {
		t.Errorf("launches per shard = %v; want one each", got)
	}
	if got := maxOverlap(readTimes(t, filepath.Join(f.dir, "out", "times"))); got != 2 {
		t.Errorf("at most %d commands ran at once; want 2, the concurrency", got)
	}
	stored, err := records(f.cp())
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 5 {
		t.Fatalf("stored %d launches; want 5", len(stored))
	}
	for i, st := range statuses {
		rec := st.Record
		if !st.Launch || rec == nil || !rec.OK() {
			t.Fatalf("shard %d: %+v; want launched and done", i, st)
		}
		want := filepath.Join(f.dir, "out", "hs_"+st.Shard.Version[len("v1-"):]+"_"+st.Shard.Version+".txt")
		if !reflect.DeepEqual(rec.Outputs, []string{want}) {
			t.Errorf("shard %d outputs %v; want [%s]", i, rec.Outputs, want)
		}
		if rec.Duration < 50*time.Millisecond || rec.FinishedAt.Before(rec.StartedAt) {
			t.Errorf("shard %d: duration %s from %s to %s", i, rec.Duration, rec.StartedAt, rec.FinishedAt)
		}
		if !reflect.DeepEqual(stored[i], *rec) {
			t.Errorf("shard %d stored as %+v; Run returned %+v", i, stored[i], *rec)
		}
		log, err := os.ReadFile(rec.Log)
		if err != nil {
			t.Fatal(err)
		}
		if want := st.Shard.Path; !strings.Contains(string(log), want) || !strings.Contains(string(log), "done, 1 outputs") {
			t.Errorf("shard %d log lacks the command's output %q or its end:\n%s", i, want, log)
		}
	}
	if due := f.due(t); len(due) != 0 {
		t.Errorf("after a full run, Plan would launch %v", due)
	}
}

func TestRun_RerunLaunchesOnlyWhatDidNotSucceed(t *testing.T) {
	f := newFixture(t, 4, map[string]string{"FAKE_FAIL": "1", "FAKE_NOOUT": "3"})
	statuses, err := Run(context.Background(), f.cp(), f.job)
	if err == nil {
		t.Fatal("Run with failing shards returned no error")
	}
	for _, want := range []string{"shard 1: exit status 3 (log ", "shard 3: exited 0 but nothing matches outputs out/hs_{index}_{version}.txt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if rec := statuses[1].Record; rec.ExitCode != 3 || rec.OK() {
		t.Errorf("failed shard recorded as %+v", rec)
	}
	plan, err := Plan(f.cp(), f.job)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[int]string{}
	for _, st := range plan {
		reasons[st.Shard.Index] = st.Reason
	}
	want := map[int]string{0: "", 1: "last launch failed: exit status 3", 2: "",
		3: "last launch failed: exited 0 but nothing matches outputs out/hs_{index}_{version}.txt"}
	if !reflect.DeepEqual(reasons, want) {
		t.Errorf("Plan reasons %v; want %v", reasons, want)
	}
	delete(f.job.Options.Env, "FAKE_FAIL")
	delete(f.job.Options.Env, "FAKE_NOOUT")
	if _, err := Run(context.Background(), f.cp(), f.job); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(t); !reflect.DeepEqual(got, []int{1, 2, 1, 2}) {
		t.Errorf("launches per shard after the rerun = %v; want [1 2 1 2]", got)
	}

	// What else makes a finished shard due again.
	if err := os.Remove(filepath.Join(f.dir, "out", "hs_2_v1-2.txt")); err != nil {
		t.Fatal(err)
	}
	if plan, _ := Plan(f.cp(), f.job); plan[2].Reason != "outputs gone: nothing matches out/hs_{index}_{version}.txt" || plan[0].Launch {
		t.Errorf("after deleting shard 2's output, Plan says %+v", plan)
	}
	f.job.Options.Argv = append(f.job.Options.Argv, "-count", "9")
	for _, st := range must(Plan(f.cp(), f.job)) {
		if st.Shard.Index != 2 && st.Reason != "command changed" {
			t.Errorf("after a command change, shard %d: %q", st.Shard.Index, st.Reason)
		}
	}
}

// TestRun_OutputsMustBeThisLaunchs: a command that exits 0 beside an
// output file that was already there has not done its shard (/bin/true
// was recorded "done, 1 outputs"), while one that rewrites its file has,
// even with the same content.
func TestRun_OutputsMustBeThisLaunchs(t *testing.T) {
	f := newFixture(t, 2, map[string]string{"FAKE_NOOUT": "0"})
	for i, sh := range f.job.Shards {
		old := filepath.Join(f.dir, "out", fmt.Sprintf("hs_%d_%s.txt", i, sh.Version))
		if err := os.WriteFile(old, []byte(fmt.Sprintf("%d lines\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		past := time.Now().Add(-time.Hour)
		os.Chtimes(old, past, past)
	}
	statuses, err := Run(context.Background(), f.cp(), f.job)
	want := "shard 0: exited 0 but wrote nothing that matches outputs out/hs_{index}_{version}.txt: the 1 file(s) matching were there before it started and it left them unchanged"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v; want %q", err, want)
	}
	if rec := statuses[0].Record; rec.OK() || len(rec.Outputs) != 0 {
		t.Errorf("shard 0 that wrote nothing is recorded %+v", rec)
	}
	if rec := statuses[1].Record; !rec.OK() || len(rec.Outputs) != 1 {
		t.Errorf("shard 1 that rewrote its file is recorded %+v", rec)
	}
	if due := f.due(t); !reflect.DeepEqual(due, []int{0}) {
		t.Errorf("Plan would launch %v; want shard 0 again", due)
	}
}

func TestRun_ChangedVersionRelaunchesThatShardOnly(t *testing.T) {
	f := newFixture(t, 3, nil)
	if _, err := Run(context.Background(), f.cp(), f.job); err != nil {
		t.Fatal(err)
	}
	f.job.Shards[1] = f.writeShard(t, 1, "v2")
	plan := must(Plan(f.cp(), f.job))
	if plan[1].Reason != "version changed (v1-1 -> v2-1)" || plan[0].Launch || plan[2].Launch {
		t.Fatalf("Plan after a version change: %+v", plan)
	}
	if _, err := Run(context.Background(), f.cp(), f.job); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(t); !reflect.DeepEqual(got, []int{1, 2, 1}) {
		t.Errorf("launches per shard = %v; want [1 2 1]", got)
	}
	for _, name := range []string{"hs_1_v1-1.txt", "hs_1_v2-1.txt"} {
		if _, err := os.Stat(filepath.Join(f.dir, "out", name)); err != nil {
			t.Errorf("output of a version: %v", err)
		}
	}
	stored := must(records(f.cp()))
	var versions []string
	for _, l := range stored {
		if l.Shard == 1 {
			versions = append(versions, l.Version)
		}
	}
	if !reflect.DeepEqual(versions, []string{"v1-1", "v2-1"}) {
		t.Errorf("shard 1's stored launches: %v; want both versions", versions)
	}
}

// TestRun_Forced: run --force launches every shard again, up to date or
// not (the extraction script changed behind the same command line).
func TestRun_Forced(t *testing.T) {
	f := newFixture(t, 3, nil)
	if _, err := Run(context.Background(), f.cp(), f.job); err != nil {
		t.Fatal(err)
	}
	if due := f.due(t); len(due) != 0 {
		t.Fatalf("due after a run: %v", due)
	}
	f.job.Force = true
	for _, st := range must(Plan(f.cp(), f.job)) {
		if !st.Launch || st.Reason != "forced" {
			t.Errorf("shard %d forced: %+v", st.Shard.Index, st)
		}
	}
	if _, err := Run(context.Background(), f.cp(), f.job); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(t); !reflect.DeepEqual(got, []int{2, 2, 2}) {
		t.Errorf("launches per shard = %v; want [2 2 2]", got)
	}
}

func TestRun_Interrupted(t *testing.T) {
	tests := []struct {
		policy string
		// ok are the shards that end done; the others of the two running
		// are stopped with the reason given.
		ok      []bool
		stopped []string
		due     []int
	}{
		{Wait, []bool{true, true}, []string{"", ""}, []int{2, 3}},
		{Stop, []bool{false, false}, []string{"stopped by interrupt: exit status 143", "stopped by interrupt: signal: killed"}, []int{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			// Shard 1 ignores SIGTERM, so stopping it takes the SIGKILL.
			// The commands run until the test releases them, which it does
			// only after the interrupt, for the policy that waits.
			f := newFixture(t, 4, map[string]string{"FAKE_AWAIT": "*=release", "FAKE_IGNORE_TERM": "1"})
			f.job.Options.Concurrency, f.job.Options.OnInterrupt, f.job.Options.Grace = 2, tt.policy, "300ms"
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				f.waitStarted(t, 0, 1)
				cancel()
				if tt.policy == Wait {
					appendLine(filepath.Join(f.dir, "out", "release"), "")
				}
			}()
			statuses, err := Run(ctx, f.cp(), f.job)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run after Ctrl-C: %v; want context.Canceled", err)
			}
			for i := range 2 {
				rec := statuses[i].Record
				if rec == nil || rec.OK() != tt.ok[i] || rec.Error != tt.stopped[i] {
					t.Errorf("shard %d recorded as %+v; want ok %v, error %q", i, rec, tt.ok[i], tt.stopped[i])
				}
			}
			for _, st := range statuses[2:] {
				if st.Launch || !strings.HasPrefix(st.Reason, "not launched: interrupted") {
					t.Errorf("shard %d after Ctrl-C: %+v", st.Shard.Index, st)
				}
			}
			if got := f.calls(t); got[2]+got[3] != 0 {
				t.Errorf("launches after Ctrl-C: %v", got)
			}
			if pids := alive(t, f.marker); len(pids) != 0 {
				t.Errorf("commands still running after Run returned: %v", pids)
			}
			if due := f.due(t); !reflect.DeepEqual(due, tt.due) {
				t.Errorf("next run would launch %v; want %v", due, tt.due)
			}
		})
	}
}

// TestRun_ParentKilled kills an eaglet stand-in with SIGKILL while two
// shards' commands run. Commands that end on SIGTERM end with it. What
// outlives it (a command ignoring SIGTERM, a worker its command left
// behind, as torchrun killed outright leaves its workers holding their
// GPUs) is named and stopped by the next run before it launches those two
// shards again, and only those.
func TestRun_ParentKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a process")
	}
	tests := []struct {
		name string
		env  map[string]string
		// left is how many processes outlive eaglet: they carry the marker.
		left int
	}{
		{"commands end with eaglet", map[string]string{}, 0},
		{"a command ignoring SIGTERM and a worker left behind", map[string]string{"FAKE_IGNORE_TERM": "3", "FAKE_WORKER": "2"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.env["FAKE_SLEEP"] = "2=60s,3=60s"
			f := newFixture(t, 4, tt.env)
			f.job.Options.Concurrency, f.job.Options.Grace = 2, "300ms"
			t.Cleanup(func() {
				for _, pid := range alive(t, f.marker) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			f.runKilled(t)
			deadline := time.Now().Add(5 * time.Second)
			// The survivors ignore SIGTERM or were never sent it: once the
			// count is down to them, it stays there.
			for len(alive(t, f.marker)) > tt.left && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if pids := alive(t, f.marker); len(pids) != tt.left {
				t.Fatalf("processes outliving their killed eaglet: %v; want %d", pids, tt.left)
			}
			plan := must(Plan(f.cp(), f.job))
			for _, st := range plan[2:] {
				if !strings.Contains(st.Reason, "but eaglet stopped before it ended") {
					t.Errorf("shard %d after the kill: %q", st.Shard.Index, st.Reason)
				}
			}
			var (
				mu     sync.Mutex
				logged strings.Builder
			)
			f.job.Log = func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(&logged, format+"\n", args...)
			}
			f.job.Options.Env["FAKE_SLEEP"] = ""
			f.job.Options.Env["FAKE_WORKER"] = ""
			if _, err := Run(context.Background(), f.cp(), f.job); err != nil {
				t.Fatal(err)
			}
			if pids := alive(t, f.marker); len(pids) != 0 {
				t.Errorf("still running after the next run: %v\n%s", pids, logged.String())
			}
			if stopped := strings.Count(logged.String(), "cut short by a killed eaglet still running"); stopped != min(tt.left, 2) {
				t.Errorf("the run stopped the leftovers of %d shards; want %d:\n%s", stopped, min(tt.left, 2), logged.String())
			}
			if got := f.calls(t); !reflect.DeepEqual(got, []int{1, 1, 2, 2}) {
				t.Errorf("launches per shard = %v; want [1 1 2 2]: only the killed ones again", got)
			}
		})
	}
}

// runKilled runs the fixture's job in an eaglet stand-in and kills that
// with SIGKILL once shards 2 and 3 are running.
func (f *fixture) runKilled(t *testing.T) {
	t.Helper()
	jobFile := filepath.Join(f.dir, "job.json")
	b, err := json.Marshal(driverJob{Store: filepath.Join(f.dir, "state.db"), Instance: f.job.Instance, Options: f.job.Options,
		Shards: f.job.Shards, Out: f.job.Out, LogDir: f.job.LogDir, Dir: f.job.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jobFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	driver := exec.Command(must(os.Executable()), "-test.run=^TestDriverProcess$")
	driver.Env = append(os.Environ(), driverEnv+"="+jobFile)
	var out bytes.Buffer
	driver.Stdout, driver.Stderr = &out, &out
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the driver's output:\n%s", out.Bytes())
		}
	})
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	f.waitStarted(t, 2, 3)
	if err := driver.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	driver.Wait()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRun_SecretsStayOut launches a command holding a secret in an
// argument and in the environment: neither reaches the log or the store,
// and a rotated secret relaunches nothing.
func TestRun_SecretsStayOut(t *testing.T) {
	f := newFixture(t, 2, map[string]string{"API_TOKEN": "tok-in-env-123"})
	secret := "tok-in-argv-456"
	f.job.Redact = func(s string) string {
		return strings.NewReplacer(secret, "***", "tok-in-env-123", "***").Replace(s)
	}
	var logged strings.Builder
	f.job.Log = func(format string, args ...any) { fmt.Fprintf(&logged, format+"\n", args...) }
	argv := f.job.Options.Argv
	f.job.Options.Argv = append(slices.Clone(argv), "-token", secret)
	statuses, err := Run(context.Background(), f.cp(), f.job)
	if err != nil {
		t.Fatal(err)
	}
	log := must(os.ReadFile(statuses[0].Record.Log))
	if !strings.Contains(string(log), "-token ***") {
		t.Errorf("log lacks the scrubbed command:\n%s", log)
	}
	db := must(os.ReadFile(filepath.Join(f.dir, "state.db")))
	wal, _ := os.ReadFile(filepath.Join(f.dir, "state.db-wal"))
	for _, s := range []string{"tok-in-argv-456", "tok-in-env-123"} {
		for name, b := range map[string][]byte{"log file": log, "store": db, "store WAL": wal, "eaglet's log": []byte(logged.String())} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %s", name, s)
			}
		}
	}
	secret = "tok-rotated-789"
	f.job.Options.Argv = append(slices.Clone(argv), "-token", secret)
	if due := f.due(t); len(due) != 0 {
		t.Errorf("a rotated secret makes shards %v due", due)
	}
}

func TestPlan_BadJob(t *testing.T) {
	argv := &Options{Argv: []string{"extract", "{shard}"}}
	tests := []struct {
		name string
		job  Job
		want string
	}{
		{"no command", Job{Instance: "h", Options: &Options{}, LogDir: "l"}, "launch h: no command"},
		{"no log directory", Job{Instance: "h", Options: argv}, "launch h: no log directory"},
		{"a shard twice", Job{Instance: "h", Options: argv, LogDir: "l", Shards: []Shard{{Index: 1, Version: "a"}, {Index: 1, Version: "b"}}},
			"launch h: shard 1 appears twice"},
		{"no version", Job{Instance: "h", Options: argv, LogDir: "l", Shards: []Shard{{Index: 0}}}, "launch h: shard 0 has no version"},
		{"unknown placeholder", Job{Instance: "h", Options: &Options{Argv: []string{"x", "{rank}"}}, LogDir: "l",
			Shards: []Shard{{Index: 0, Version: "a"}}}, "launch h: argv[1]: unknown placeholder {rank}"},
	}
	s, err := state.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A finished launch makes Plan expand the command, where a bad
	// placeholder is found.
	if err := (&Record{Version: "a", StartedAt: time.Now(), FinishedAt: time.Now(), ExitCode: 0}).save(s.Checkpoints("h")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Plan(s.Checkpoints("h"), &tt.job); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Plan: %v; want %q", err, tt.want)
			}
		})
	}
}
