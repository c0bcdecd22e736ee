package dataset

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/eaglet-dev/eaglet/internal/rusage"
)

// benchRows is the size of the generated files: about 20 MB of chat rows
// of a few hundred bytes to a few KB, like real SFT data.
const benchRows = 20000

func benchRow(i int) pqRow {
	answer := strings.Repeat(fmt.Sprintf("Sentence %d of a typical answer, with some words. ", i), 3+i%40)
	return pqRow{ID: fmt.Sprint(i), Messages: []pqMessage{
		{"system", "You are a helpful assistant."},
		{"user", fmt.Sprintf("Question number %d: explain something in detail, please.", i)},
		{"assistant", answer},
	}}
}

func benchJSONL(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "bench.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range benchRows {
		r := benchRow(i)
		msgs := make([]map[string]string, len(r.Messages))
		for j, m := range r.Messages {
			msgs[j] = map[string]string{"role": m.Role, "content": m.Content}
		}
		line, _ := json.Marshal(map[string]any{"id": r.ID, "messages": msgs})
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return p
}

func benchParquet(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "bench.parquet")
	rows := make([]pqRow, benchRows)
	for i := range rows {
		rows[i] = benchRow(i)
	}
	writeParquet(b, p, rows)
	return p
}

// report sets MB/s from the file size and adds records/s.
func report(b *testing.B, path string, start time.Time) {
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportMetric(float64(benchRows*b.N)/time.Since(start).Seconds(), "records/s")
}

func loadAll(b *testing.B, path string) {
	r, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	r.Close()
	if n != benchRows {
		b.Fatalf("loaded %d records, want %d", n, benchRows)
	}
}

func BenchmarkLoad_JSONL(b *testing.B) {
	p := benchJSONL(b)
	start := time.Now()
	b.ResetTimer()
	for range b.N {
		loadAll(b, p)
	}
	report(b, p, start)
}

// BenchmarkBaseline_JSONL is the floor: read lines and decode each into a
// typed struct with encoding/json, nothing else.
func BenchmarkBaseline_JSONL(b *testing.B) {
	p := benchJSONL(b)
	start := time.Now()
	b.ResetTimer()
	for range b.N {
		bareLoop(b, p)
	}
	report(b, p, start)
}

func bareLoop(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<16))
	n := 0
	for {
		var row struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := dec.Decode(&row); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
		n++
	}
	if n != benchRows {
		b.Fatalf("decoded %d rows", n)
	}
}

// BenchmarkLoad_JSONLVsBaseline loads the messages file and decodes it with
// the bare loop in turn, in one run, and reports the load's speed as a
// share of the loop's, which a noisy machine moves less than either, by
// wall time (load/bare) and by the process's CPU time (load/bare-cpu,
// which counts the garbage collector's work and any parallel parsing):
//
//	go test ./internal/dataset -run '^$' -bench JSONLVsBaseline -benchtime 10x
func BenchmarkLoad_JSONLVsBaseline(b *testing.B) {
	p := benchJSONL(b)
	var load, bare, loadCPU, bareCPU time.Duration
	for b.Loop() {
		t, c := time.Now(), rusage.CPU()
		loadAll(b, p)
		load += time.Since(t)
		loadCPU += rusage.CPU() - c
		t, c = time.Now(), rusage.CPU()
		bareLoop(b, p)
		bare += time.Since(t)
		bareCPU += rusage.CPU() - c
	}
	st, _ := os.Stat(p)
	b.ReportMetric(float64(st.Size())*float64(b.N)/load.Seconds()/1e6, "load-MB/s")
	b.ReportMetric(float64(st.Size())*float64(b.N)/bare.Seconds()/1e6, "bare-MB/s")
	b.ReportMetric(bare.Seconds()/load.Seconds(), "load/bare")
	b.ReportMetric(bareCPU.Seconds()/loadCPU.Seconds(), "load/bare-cpu")
}

func BenchmarkLoad_Parquet(b *testing.B) {
	p := benchParquet(b)
	start := time.Now()
	b.ResetTimer()
	for range b.N {
		loadAll(b, p)
	}
	report(b, p, start)
}

// BenchmarkBaseline_Parquet is the floor for Parquet: parquet-go reading
// rows into the typed struct that wrote them.
func BenchmarkBaseline_Parquet(b *testing.B) {
	p := benchParquet(b)
	start := time.Now()
	b.ResetTimer()
	for range b.N {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		r := parquet.NewGenericReader[pqRow](f)
		buf := make([]pqRow, parquetBatch)
		n := 0
		for {
			k, err := r.Read(buf)
			n += k
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		r.Close()
		f.Close()
		if n != benchRows {
			b.Fatalf("read %d rows", n)
		}
	}
	report(b, p, start)
}
