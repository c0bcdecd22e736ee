package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
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
			for i := 0; b.Loop(); i++ {
				sum := sha256.Sum256(fmt.Appendf(nil, "record %d", i))
				key := hex.EncodeToString(sum[:16])
				batch = append(batch, Item{Key: key, FP: "fp", InHash: key, OutHash: key, Data: data, CompletionTokens: 500})
				if len(batch) == cap(batch) {
					if err := s.Commit("generate[d]", batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			if err := s.Commit("generate[d]", batch); err != nil {
				b.Fatal(err)
			}
		})
	}
}
