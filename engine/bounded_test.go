package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages"
)

// bounded is a Mapper that takes ten milliseconds a record (commits come every 200 ms) and, for
// dataset "capped", says it will finish no more records (as a spent
// budget does); for any other dataset it cannot tell.
type bounded struct{ capped bool }

func (bounded) Process(context.Context, *conv.Record) (stages.Outcome, error) {
	time.Sleep(10 * time.Millisecond)
	return stages.Outcome{Status: stages.Done}, nil
}
func (bounded) Progress() string { return "" }
func (b bounded) Left() int {
	if b.capped {
		return 0
	}
	return -1
}

func init() {
	stages.Register(stages.Kind{Name: "test-bounded", Options: func() any { return &struct{}{} },
		New: func(inst *stages.Instance) (stages.Stage, error) {
			return bounded{capped: inst.Dataset != nil && inst.Dataset.Name == "capped"}, nil
		}})
}

// TestProgress_ETAOfABoundedStage: a stage that says how many more records
// it will finish (a budget) gets an ETA for those, not for every record
// left: one that will finish none shows no ETA, while the same stage that
// cannot tell shows one.
//
// The stage's 10 ms a record and the progress ticks run on synctest's
// clock: the lines do not hang on the machine's load, and take no time.
func TestProgress_ETAOfABoundedStage(t *testing.T) {
	synctest.Test(t, testETAOfABoundedStage)
}

func testETAOfABoundedStage(t *testing.T) {
	dir := t.TempDir()
	var data bytes.Buffer
	for i := range 80 {
		fmt.Fprintf(&data, `{"messages":[{"role":"user","content":"q%d"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "d.jsonl"), data.Bytes(), 0o644)
	p, store := enginetest.Open(t, dir, "version: 1\nname: b\nstate: s.db\n"+
		"datasets: {capped: {source: d.jsonl}, free: {source: d.jsonl}}\nstages:\n"+
		"  - {name: load, uses: load, foreach: datasets}\n"+
		"  - {name: work, uses: test-bounded, needs: [load], foreach: datasets, concurrency: 1}\n")
	var log enginetest.Log
	if _, err := p.Run(context.Background(), store, engine.RunOptions{Log: &log, ProgressEvery: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	lines := map[string][]string{}
	for _, l := range strings.Split(log.String(), "\n") {
		for _, id := range []string{"work[capped]", "work[free]"} {
			if strings.Contains(l, id+": ") && strings.Contains(l, " rec/s") {
				lines[id] = append(lines[id], l)
			}
		}
	}
	if len(lines["work[capped]"]) == 0 || len(lines["work[free]"]) == 0 {
		t.Fatalf("no progress lines for both instances in:\n%s", log.String())
	}
	for _, l := range lines["work[capped]"] {
		if strings.Contains(l, "ETA") {
			t.Errorf("a stage that will finish no more records shows an ETA: %s", l)
		}
	}
	eta := 0
	for _, l := range lines["work[free]"] {
		if strings.Contains(l, "ETA") {
			eta++
		}
	}
	if eta == 0 {
		t.Errorf("the stage that cannot tell shows no ETA:\n%s", strings.Join(lines["work[free]"], "\n"))
	}
}
