package managed

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/eaglet-dev/eaglet/specs"
)

// record is what a launch leaves beside its servers' logs for the next
// plan: how long they took to answer.
type record struct {
	StartUpSeconds float64 `json:"start_up_seconds"`
}

// keep writes the record of the group's launch. It is advice for plan,
// so a failure to write it fails nothing.
func (g *Group) keep(r record) {
	b, err := json.Marshal(r)
	if err == nil {
		os.WriteFile(recordPath(g.dir, g.cfg.Name), b, 0o644)
	}
}

// lastLaunch reads the record the last launch of endpoint name left in
// dir; ok is false when there is none.
func lastLaunch(dir, name string) (r record, ok bool) {
	b, err := os.ReadFile(recordPath(dir, name))
	if err != nil || json.Unmarshal(b, &r) != nil {
		return record{}, false
	}
	return r, true
}

// logDir is where a spec's launched servers write their logs: servers/
// beside the store, on the filesystem a job on another node shares.
func logDir(s *specs.Spec) string { return filepath.Join(filepath.Dir(s.State), "servers") }

func recordPath(dir, name string) string { return filepath.Join(dir, name+".json") }
