package serve

import (
	"context"
	"os"
	"sync"
	"testing"
)

// records collects what a group records and forgets of its replicas, as
// the store does for a run.
type records struct {
	mu sync.Mutex
	m  map[int]Record
}

func (rs *records) watch(cfg *Config) {
	rs.m = map[int]Record{}
	cfg.Recorded = func(r Record) { rs.mu.Lock(); rs.m[r.Replica] = r; rs.mu.Unlock() }
	cfg.Forget = func(i int) { rs.mu.Lock(); delete(rs.m, i); rs.mu.Unlock() }
}

func (rs *records) get(i int) (Record, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.m[i]
	return r, ok
}

// TestStart_AdoptsRecordedJob: a job is recorded once submitted and again
// with its URL once it answers. The next start given the record adopts
// the job if it still answers (no submit); if not (here: no address to
// find it at), it cancels it with the stop command and submits afresh.
// Stopping the group forgets the record.
func TestStart_AdoptsRecordedJob(t *testing.T) {
	slurm := []string{"sbatch", "--wrap", "fake-server -address-file {address_file} -replica {replica}"}
	for _, tc := range []struct {
		name    string
		silence bool // the job's address is gone
		adopted bool
	}{
		{name: "answering", adopted: true},
		{name: "silent", silence: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, jobs := schedulerConfig(t, SGLang, Options{Argv: slurm})
			var rs records
			rs.watch(&cfg)
			first, err := start(t, context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			old := first.Replicas()[0]
			rec, ok := rs.get(0)
			if !ok || rec.JobID != old.JobID || rec.URL != old.URL {
				t.Fatalf("record %+v (recorded %v), want job %s at %s", rec, ok, old.JobID, old.URL)
			}
			if tc.silence {
				os.Remove(old.addressFile)
			}
			// The first group is left as a killed eaglet leaves its jobs.
			cfg.Adopt = []Record{rec}
			g, err := start(t, context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := g.Replicas()[0]
			if got := r.JobID == old.JobID; got != tc.adopted {
				t.Errorf("adopted %v (job %s, recorded %s), want %v", got, r.JobID, old.JobID, tc.adopted)
			}
			if oldRunning := jobPID(jobs, "slurm-"+old.JobID) != 0; oldRunning != tc.adopted {
				t.Errorf("recorded job running: %v, want %v", oldRunning, tc.adopted)
			}
			if rec, ok := rs.get(0); !ok || rec.JobID != r.JobID {
				t.Errorf("record %+v (recorded %v), want job %s", rec, ok, r.JobID)
			}
			if err := g.Stop(); err != nil {
				t.Fatal(err)
			}
			if rec, ok := rs.get(0); ok {
				t.Errorf("record %+v left after the stop", rec)
			}
		})
	}
}

// TestStart_AdoptsKeptServer: a kept local server is recorded with its
// pid; the next start given the record adopts it, and stopping that group
// ends its process group though this start did not launch it, and is
// seen as its exit, as a watcher needs to restart it.
func TestStart_AdoptsKeptServer(t *testing.T) {
	cfg := testConfig(t, SGLang, Options{Argv: []string{"fake-server", "-port", "{port}"}, Keep: true, Grace: "2s"})
	var rs records
	rs.watch(&cfg)
	first, err := start(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := first.Replicas()[0]
	rec, ok := rs.get(0)
	if !ok || rec.PID != old.PID || rec.URL != old.URL {
		t.Fatalf("record %+v (recorded %v), want pid %d at %s", rec, ok, old.PID, old.URL)
	}
	cfg.Adopt = []Record{rec}
	g, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := g.Replicas()[0]; r.PID != old.PID || r.URL != old.URL {
		t.Fatalf("started pid %d at %s, want the kept pid %d at %s adopted", r.PID, r.URL, old.PID, old.URL)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Replicas()[0].Exited():
	default:
		t.Error("the adopted server's end is not seen: a watcher could not restart it")
	}
	if !gone(old.PID) {
		t.Errorf("the adopted server (pid %d) still runs", old.PID)
	}
	if rec, ok := rs.get(0); ok {
		t.Errorf("record %+v left after the stop", rec)
	}
}
