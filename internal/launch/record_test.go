package launch

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/state"
)

// TestRecord_DurationReadBack: a launch's duration reads back as it was
// saved, to the nanosecond, whatever its value (a run's own timing picks
// it); the store keeps it in seconds.
func TestRecord_DurationReadBack(t *testing.T) {
	s, err := state.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cp := s.Checkpoints("h")
	durations := []time.Duration{0, 66906709, 300 * time.Millisecond, 1500*time.Millisecond + 1, 36*time.Hour + 123456789}
	for i, d := range durations {
		if err := (&Record{Shard: i, Version: "v", Duration: d}).save(cp); err != nil {
			t.Fatal(err)
		}
	}
	got, err := records(cp)
	if err != nil || len(got) != len(durations) {
		t.Fatalf("records: %d, %v; want %d", len(got), err, len(durations))
	}
	for i, r := range got {
		if r.Duration != durations[i] {
			t.Errorf("shard %d: duration %d ns read back; saved %d ns", i, r.Duration, durations[i])
		}
	}
}
