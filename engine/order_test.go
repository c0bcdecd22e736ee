package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages"
)

// orderRecorder is a Mapper that notes the order records reach it and
// asks for the longest prompts first.
type orderRecorder struct {
	mu   *sync.Mutex
	seen *[]string
}

func (o orderRecorder) Process(_ context.Context, rec *conv.Record) (stages.Outcome, error) {
	o.mu.Lock()
	*o.seen = append(*o.seen, rec.Messages[0].Content)
	o.mu.Unlock()
	return stages.Outcome{Status: stages.Done}, nil
}
func (orderRecorder) Prioritize() bool { return true }
func (orderRecorder) Priority(rec *conv.Record) float64 {
	return float64(len(rec.Messages[0].Content))
}

var (
	orderMu   sync.Mutex
	orderSeen []string
)

func init() {
	stages.Register(stages.Kind{Name: "test-order", Options: func() any { return &struct{}{} },
		New: func(*stages.Instance) (stages.Stage, error) { return orderRecorder{&orderMu, &orderSeen}, nil }})
}

func TestRun_PrioritizedDispatch(t *testing.T) {
	dir := t.TempDir()
	var data bytes.Buffer
	for _, n := range []int{3, 9, 1, 7, 5, 8, 2} {
		fmt.Fprintf(&data, `{"messages":[{"role":"user","content":"%s"}]}`+"\n", strings.Repeat("x", n))
	}
	os.WriteFile(filepath.Join(dir, "d.jsonl"), data.Bytes(), 0o644)
	spec := "version: 1\nname: o\nstate: s.db\ndatasets: {d: {source: d.jsonl}}\nstages:\n" +
		"  - {name: load, uses: load, foreach: datasets}\n" +
		"  - {name: order, uses: test-order, needs: [load], foreach: datasets, concurrency: 1}\n"
	enginetest.OpenAndRun(t, dir, spec)
	var lengths []int
	for _, s := range orderSeen {
		lengths = append(lengths, len(s))
	}
	if fmt.Sprint(lengths) != "[9 8 7 5 3 2 1]" {
		t.Errorf("records were dispatched in the order %v; want longest first", lengths)
	}
}
