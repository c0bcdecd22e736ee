package launch_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/eaglet-dev/eaglet/internal/launch"
	"github.com/eaglet-dev/eaglet/state"
)

// A stage launches its shards with Run and says what a run would launch
// with Plan; both read the same checkpoints.
func Example() {
	dir, _ := os.MkdirTemp("", "launch-example")
	defer os.RemoveAll(dir)
	store, _ := state.Open(filepath.Join(dir, "state.db"))
	defer store.Close()
	job := &launch.Job{
		Instance: "handoff",
		Options:  &launch.Options{Argv: []string{"cp", "{shard}", "{out}/copy-{index}-{version}"}, Outputs: "{out}/copy-{index}-*", Concurrency: 2},
		Out:      dir,
		LogDir:   filepath.Join(dir, "logs"),
	}
	for i, v := range []string{"a1", "b2", "c3"} {
		path := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		os.WriteFile(path, []byte("{}\n"), 0o644)
		job.Shards = append(job.Shards, launch.Shard{Index: i, Path: path, Version: v, Tokens: 100})
	}
	if _, err := launch.Run(context.Background(), store.Checkpoints(job.Instance), job); err != nil {
		fmt.Println(err)
	}
	job.Shards[1].Version = "b3"
	plan, _ := launch.Plan(store.Checkpoints(job.Instance), job)
	for _, st := range plan {
		fmt.Printf("shard %d: launch %v (%s)\n", st.Shard.Index, st.Launch, cmp.Or(st.Reason, "up to date"))
	}
	// Output:
	// shard 0: launch false (up to date)
	// shard 1: launch true (version changed (b2 -> b3))
	// shard 2: launch false (up to date)
}
