package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/rusage"
)

// BenchmarkCommit stores generated records as the engine does, in batches
// of 256 with content-hash keys, at the sizes of a short chat answer and of
// a 2,000-token answer with its token ids:
//
//	go test ./state -run '^$' -bench Commit
func BenchmarkCommit(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			data := []byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("x", size-64) + `"}]}`)
			batch := make([]Item, 0, 256)
			b.SetBytes(int64(len(data)))
			var slowest time.Duration // a kill loses the commit under way
			for i := 0; b.Loop(); i++ {
				sum := sha256.Sum256(fmt.Appendf(nil, "record %d", i))
				key := hex.EncodeToString(sum[:16])
				batch = append(batch, Item{Key: key, FP: "fp", InHash: key, OutHash: key, Data: data, CompletionTokens: 500})
				if len(batch) == cap(batch) {
					t0 := time.Now()
					if err := s.Commit("generate[d]", batch); err != nil {
						b.Fatal(err)
					}
					slowest = max(slowest, time.Since(t0))
					batch = batch[:0]
				}
			}
			if err := s.Commit("generate[d]", batch); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(slowest.Microseconds())/1000, "max-commit-ms")
		})
	}
}

// BenchmarkCommit_AnswerBatches stores 1 KiB generated answers as the
// engine's commit loop does, with every column a generated answer fills
// (content hashes, so both answer indexes take each row, finish reason,
// timing, URL), in batches of 256 and of 1,024, and reports the process's
// CPU a row beside the time:
//
//	go test ./state -run '^$' -bench Commit_AnswerBatches -benchtime 20000x
func BenchmarkCommit_AnswerBatches(b *testing.B) {
	for _, size := range []int{256, 1024} {
		b.Run(fmt.Sprintf("batch%d", size), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			data := []byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("x", 1000) + `"}]}`)
			fp := strings.Repeat("f", 64)
			batch := make([]Item, 0, size)
			cpu0, n := rusage.CPU(), 0
			var slowest time.Duration // a kill loses the commit under way
			for i := 0; b.Loop(); i++ {
				sum := sha256.Sum256(fmt.Appendf(nil, "record %d", i))
				key, chash := hex.EncodeToString(sum[:16]), hex.EncodeToString(sum[16:28])
				batch = append(batch, Item{Key: key, FP: fp, InHash: key, OutHash: key, Data: data, PromptTokens: 20,
					CompletionTokens: 50 + i%50, InChash: chash, Chash: chash, Requests: 1, Finish: "stop",
					Sent: int64(i), FirstToken: int64(i), Finished: int64(i), URL: "http://127.0.0.1:30000/v1"})
				if len(batch) == cap(batch) {
					t0 := time.Now()
					if err := s.Commit("generate[d]", batch); err != nil {
						b.Fatal(err)
					}
					slowest = max(slowest, time.Since(t0))
					batch = batch[:0]
				}
				n++
			}
			if err := s.Commit("generate[d]", batch); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64((rusage.CPU()-cpu0).Microseconds())/float64(n), "cpu-us/row")
			b.ReportMetric(float64(slowest.Microseconds())/1000, "max-commit-ms")
		})
	}
}

// BenchmarkCollapsed counts records shared between three instances of
// EAGLET_BENCH_RECORDS records in all (default 300,000), 1% of them held
// by two, as a merge over three datasets does before it runs when the
// instances' counts (count-s) say some are shared:
//
//	go test ./state -run '^$' -bench Collapsed -benchtime 1x
func BenchmarkCollapsed(b *testing.B) {
	s, ids := threeInstances(b)
	defer s.Close()
	for b.Loop() {
		started := time.Now()
		for _, id := range ids {
			if _, err := s.CountOutputs([]string{id}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(time.Since(started).Seconds(), "count-s")
		c, err := s.Collapsed(ids)
		if err != nil {
			b.Fatal(err)
		}
		shared := 0
		for _, x := range c {
			shared += x.N
		}
		b.ReportMetric(float64(shared), "collapsed")
	}
}

// BenchmarkBatchWriter replaces a batch stage's output of 100,000 small
// records put in random key order (a load's), as the engine does: put,
// count, commit. The records are written in key order, sorted aside:
//
//	go test ./state -run '^$' -bench BatchWriter -benchtime 3x
func BenchmarkBatchWriter(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 100_000
	data := []byte(`{"messages":[{"role":"user","content":"Question: how do I sort a list of numbers in place?"}],"dataset":"d"}`)
	for b.Loop() {
		bw, err := s.BeginBatch("load[d]")
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			sum := sha256.Sum256(fmt.Appendf(nil, "record %d", i))
			key := hex.EncodeToString(sum[:16])
			if err := bw.Put(Item{Key: key, FP: "fp", OutHash: key[:24], Chash: key[8:], Data: data, PromptTokens: 20}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := bw.Live(); err != nil {
			b.Fatal(err)
		}
		if err := bw.Commit(s, &Instance{ID: "load[d]", Stage: "load", Status: StatusDone}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}

// threeInstances stores EAGLET_BENCH_RECORDS records (default 300,000) in
// three instances, every hundredth record of the second and third
// repeating one of the first, as three datasets' filters before a merge.
func threeInstances(b *testing.B) (*Store, []string) {
	n := 300_000
	if v, err := strconv.Atoi(os.Getenv("EAGLET_BENCH_RECORDS")); err == nil {
		n = v
	}
	s, err := Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	ids := []string{"filter[a]", "filter[b]", "filter[c]"}
	for d, id := range ids {
		batch := make([]Item, 0, 1000)
		for i := range n / 3 {
			tag := fmt.Sprintf("%d %d", d, i)
			if d > 0 && i%100 == 0 {
				tag = fmt.Sprintf("0 %d", i)
			}
			sum := sha256.Sum256([]byte(tag))
			key := hex.EncodeToString(sum[:16])
			batch = append(batch, Item{Key: key, FP: "fp", Data: []byte(`{}`), OutHash: key})
			if len(batch) == cap(batch) || i == n/3-1 {
				if err := s.Commit(id, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	return s, ids
}

// BenchmarkEachOutput_ThreeInstances reads three instances' records as one
// input in key order, as a merge after per-dataset stages does, and
// (each-pending) as an item stage over every dataset after per-dataset
// ones finds what it has left (EAGLET_BENCH_RECORDS, default 300,000, in
// all):
//
//	go test ./state -run '^$' -bench EachOutput_ThreeInstances -benchtime 1x
func BenchmarkEachOutput_ThreeInstances(b *testing.B) {
	s, ids := threeInstances(b)
	defer s.Close()
	for _, read := range []struct {
		name string
		each func(fn func(Row) error) error
	}{
		{"each-output", func(fn func(Row) error) error { return s.EachOutput(context.Background(), ids, fn) }},
		{"each-pending", func(fn func(Row) error) error {
			return s.EachPending(context.Background(), "after", ids, "fp", fn)
		}},
	} {
		b.Run(read.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				if err := read.each(func(Row) error {
					n++
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n), "records")
			}
		})
	}
}
