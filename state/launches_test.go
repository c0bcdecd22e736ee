package state

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestStore_PutLaunch_RoundTrip(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Unix(1_700_000_000, 0)
	running := Launch{Instance: "handoff", Shard: 1, Version: "v1", ArgvHash: "a", StartedAt: t0, Log: "logs/1.log"}
	done := Launch{Instance: "handoff", Shard: 0, Version: "v1", ArgvHash: "a", StartedAt: t0, FinishedAt: t0.Add(90 * time.Second),
		Duration: 90 * time.Second, Log: "logs/0.log", Outputs: []string{"out/0.pt", "out/1.pt"}}
	failed := Launch{Instance: "handoff", Shard: 0, Version: "v0", ArgvHash: "a", StartedAt: t0.Add(-time.Hour),
		FinishedAt: t0.Add(-time.Hour + time.Second), ExitCode: 3, Duration: time.Second, Error: "exit status 3"}
	other := Launch{Instance: "other", Shard: 0, Version: "v1", StartedAt: t0}
	for _, l := range []Launch{running, done, failed, other} {
		if err := s.PutLaunch(&l); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Launches("handoff")
	if err != nil {
		t.Fatal(err)
	}
	running.Outputs, failed.Outputs = []string{}, []string{}
	want := []Launch{failed, done, running}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Launches:\n got %+v\nwant %+v", got, want)
	}
	for _, tt := range []struct {
		l            Launch
		finished, ok bool
	}{{running, false, false}, {done, true, true}, {failed, true, false}} {
		if tt.l.Finished() != tt.finished || tt.l.OK() != tt.ok {
			t.Errorf("shard %d %s: Finished %v OK %v; want %v %v", tt.l.Shard, tt.l.Version, tt.l.Finished(), tt.l.OK(), tt.finished, tt.ok)
		}
	}
	// Relaunching a version replaces its row; other versions stay.
	running.FinishedAt, running.ExitCode, running.Error = t0.Add(time.Minute), -1, "stopped by Ctrl-C"
	if err := s.PutLaunch(&running); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Launches("handoff"); len(got) != 3 || got[2].Error != "stopped by Ctrl-C" {
		t.Errorf("after relaunch: %+v", got)
	}
	if err := s.Reset([]string{"handoff"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Launches("handoff"); len(got) != 0 {
		t.Errorf("launches after Reset: %+v", got)
	}
	if got, _ := s.Launches("other"); len(got) != 1 {
		t.Errorf("Reset of handoff forgot other's launches: %+v", got)
	}
}

// TestStore_Open_MigratesSchema5 opens a store of the schema before
// launches and stores a launch in it.
func TestStore_Open_MigratesSchema5(t *testing.T) {
	s := openAtSchema(t, 5, `INSERT INTO instances (id, stage, status) VALUES ('h', 'handoff', 'done')`)
	if err := s.PutLaunch(&Launch{Instance: "h", Version: "v", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Launches("h"); err != nil || len(got) != 1 {
		t.Errorf("launches after migration: %v, %v", got, err)
	}
	if in, err := s.GetInstance("h"); err != nil || in == nil || in.Status != "done" {
		t.Errorf("instance after migration: %+v, %v", in, err)
	}
}
