package dedupe

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/eaglet-dev/eaglet/internal/dataset"
)

// benchRef is where a benchmark n-gram was read.
type benchRef struct {
	file  uint32 // index in benchIndex.files
	line  uint32
	index uint32 // the prompt's record in its file
	// words is the benchmark prompt's length in words when it is shorter
	// than the index's n, so matched whole; 0 otherwise.
	words uint32
}

// benchIndex holds the n-grams of benchmark prompts. Benchmarks are small
// (thousands of prompts), so their grams fit in a map; training prompts are
// streamed past it.
type benchIndex struct {
	n     int
	files []string // as the spec names them
	grams map[uint64]benchRef
	// short holds the word counts of benchmark prompts shorter than n
	// words, each one gram of its own length ("What is 2+2?" is contamination
	// when a training prompt holds it, though it has no 13 words).
	short []int
	// prompts counts the benchmark prompts read, and left those of fewer
	// than minWords words, which match nothing.
	prompts, left, minWords int
}

// readBenchmarks reads every benchmark file (any shape load reads) into an
// index of n-grams, leaving out prompts of fewer than minWords words.
// paths are resolved; names are as the spec wrote them.
func readBenchmarks(paths, names []string, n, minWords int) (*benchIndex, error) {
	ix := &benchIndex{n: n, files: names, grams: map[uint64]benchRef{}, minWords: minWords}
	var words []uint64
	for fi, path := range paths {
		r, err := dataset.Open(path, dataset.Options{})
		if err != nil {
			return nil, fmt.Errorf("benchmark %s: %w", names[fi], err)
		}
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("benchmark %s: %w", names[fi], err)
			}
			ix.prompts++
			words = wordHashes(words[:0], promptText(rec))
			if len(words) < minWords {
				ix.left++
				continue
			}
			ref := benchRef{file: uint32(fi), line: uint32(rec.Source.Line), index: uint32(rec.Source.Index)}
			gram := n
			if len(words) < n {
				gram = len(words)
				ref.words = uint32(gram)
				if gram > 0 && !slices.Contains(ix.short, gram) {
					ix.short = append(ix.short, gram)
				}
			}
			eachGram(words, gram, func(h uint64, _ int) bool {
				if _, dup := ix.grams[h]; !dup {
					ix.grams[h] = ref
				}
				return true
			})
		}
		r.Close()
	}
	slices.Sort(ix.short)
	return ix, nil
}

// match returns the first benchmark gram found in words, with the index of
// its first word in words.
func (ix *benchIndex) match(words []uint64) (ref benchRef, at, length int, found bool) {
	look := func(n int) bool {
		eachGram(words, n, func(h uint64, start int) bool {
			ref, found = ix.grams[h]
			at, length = start, n
			return !found
		})
		return found
	}
	if look(ix.n) {
		return
	}
	for _, n := range ix.short {
		if look(n) {
			return
		}
	}
	return
}

// where names a benchmark prompt as file:line (or file, row N).
func (ix *benchIndex) where(r benchRef) string {
	if r.line > 0 {
		return fmt.Sprintf("%s:%d", ix.files[r.file], r.line)
	}
	return fmt.Sprintf("%s, row %d", ix.files[r.file], r.index)
}

// statFile checks that a benchmark file can be read, in a few words.
func statFile(path string) (os.FileInfo, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("no such file")
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, errors.New("is a directory, not a file")
	}
	return fi, nil
}

// fileHashes identifies the benchmark files by content, so editing one
// reruns the stage, and moving or touching one does not.
func fileHashes(paths, names []string) (string, error) {
	h := sha256.New()
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return "", fmt.Errorf("benchmark %s: %w", names[i], err)
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("benchmark %s: %w", names[i], err)
		}
		fmt.Fprintf(h, "\x00%s\x00", names[i])
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}
