package tokenizer

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"unicode/utf8"
)

// bpe is a byte-pair-encoding model. For byte-level tokenizers its tokens
// are kept as raw bytes (the GPT-2 byte-to-unicode mapping undone at load),
// so pieces are encoded straight from the input without mapping them.
type bpe struct {
	vocab  map[string]int32
	merges map[uint64]merge
	// byteLevel models start from one symbol per byte (byteIDs); the others
	// from one per rune, falling back to <0xXX> tokens or unk.
	byteLevel    bool
	byteIDs      [256]int32
	byteFallback bool
	fallbackIDs  [256]int32
	unk          int32
	fuseUnk      bool
	ignoreMerges bool
	cache        *pieceCache
}

// merge is what a pair of adjacent tokens becomes, and how early.
type merge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// encode appends the ids of one pre-tokenized piece to out.
func (m *bpe) encode(piece string, out []int) []int {
	if piece == "" {
		return out
	}
	// Most pieces are one byte or a whole token: answer those before the
	// cache, whose lookup costs a hash, a lock and a map access.
	if len(piece) == 1 && m.byteLevel && m.byteIDs[piece[0]] >= 0 {
		return append(out, int(m.byteIDs[piece[0]]))
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[piece]; ok {
			return append(out, int(id))
		}
	}
	if ids, ok := m.cache.get(piece); ok {
		for _, id := range ids {
			out = append(out, int(id))
		}
		return out
	}
	var buf [64]int32
	ids := m.symbols(piece, buf[:0])
	if len(ids) > 1 {
		if len(ids) <= 48 {
			ids = m.mergeSmall(ids)
		} else {
			ids = m.mergeLarge(ids)
		}
	}
	m.cache.put(piece, ids)
	for _, id := range ids {
		out = append(out, int(id))
	}
	return out
}

// symbols returns the piece's starting tokens, as HF's BPE::merge_word does.
func (m *bpe) symbols(piece string, ids []int32) []int32 {
	if m.byteLevel {
		for i := 0; i < len(piece); i++ {
			if id := m.byteIDs[piece[i]]; id >= 0 {
				ids = append(ids, id)
			} else if m.unk >= 0 {
				ids = append(ids, m.unk)
			}
		}
		return ids
	}
	pendingUnk := false
	for i := 0; i < len(piece); {
		_, w := utf8.DecodeRuneInString(piece[i:])
		ch := piece[i : i+w]
		i += w
		if id, ok := m.vocab[ch]; ok {
			if pendingUnk {
				ids = append(ids, m.unk)
				pendingUnk = false
			}
			ids = append(ids, id)
			continue
		}
		if m.byteFallback && m.hasFallback(ch) {
			// HF emits the bytes without flushing a pending unk first.
			for k := 0; k < len(ch); k++ {
				ids = append(ids, m.fallbackIDs[ch[k]])
			}
			continue
		}
		if m.unk < 0 {
			continue
		}
		if pendingUnk && !m.fuseUnk {
			ids = append(ids, m.unk)
		}
		pendingUnk = true
	}
	if pendingUnk {
		ids = append(ids, m.unk)
	}
	return ids
}

func (m *bpe) hasFallback(ch string) bool {
	for k := 0; k < len(ch); k++ {
		if m.fallbackIDs[ch[k]] < 0 {
			return false
		}
	}
	return true
}

const noRank = int32(1<<31 - 1)

func (m *bpe) rank(a, b int32) merge {
	if mg, ok := m.merges[pairKey(a, b)]; ok {
		return mg
	}
	return merge{rank: noRank}
}

// mergeSmall applies merges lowest rank first, leftmost on ties: quadratic,
// and the fastest for the short pieces that make up almost all text.
func (m *bpe) mergeSmall(ids []int32) []int32 {
	var rbuf [48]merge
	ranks := rbuf[:len(ids)-1]
	for i := range ranks {
		ranks[i] = m.rank(ids[i], ids[i+1])
	}
	for len(ranks) > 0 {
		best := 0
		for i := 1; i < len(ranks); i++ {
			if ranks[i].rank < ranks[best].rank {
				best = i
			}
		}
		if ranks[best].rank == noRank {
			break
		}
		ids[best] = ranks[best].id
		ids = append(ids[:best+1], ids[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		if best > 0 {
			ranks[best-1] = m.rank(ids[best-1], ids[best])
		}
		if best < len(ranks) {
			ranks[best] = m.rank(ids[best], ids[best+1])
		}
	}
	return ids
}

// mergeLarge is mergeSmall in O(n log n) for long pieces (a run of one
// character class can be megabytes): a heap of candidate pairs over a linked
// list. A candidate is only its rank and position, packed in a uint64 that
// orders as the merge order does; a popped candidate whose pair no longer
// has that rank is stale and skipped.
func (m *bpe) mergeLarge(ids []int32) []int32 {
	n := len(ids)
	next := make([]int32, n)
	prev := make([]int32, n)
	for i := range ids {
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	next[n-1] = -1
	h := candidates(make([]uint64, 0, n))
	push := func(p int32) {
		if p < 0 || next[p] < 0 {
			return
		}
		if mg := m.rank(ids[p], ids[next[p]]); mg.rank != noRank {
			h.push(uint64(mg.rank)<<32 | uint64(p))
		}
	}
	for i := range n - 1 {
		push(int32(i))
	}
	for len(h) > 0 {
		c := h.pop()
		p := int32(uint32(c))
		q := next[p]
		if ids[p] < 0 || q < 0 {
			continue
		}
		mg := m.rank(ids[p], ids[q])
		if mg.rank != int32(c>>32) {
			continue
		}
		ids[p] = mg.id
		ids[q] = -1
		next[p] = next[q]
		if next[q] >= 0 {
			prev[next[q]] = p
		}
		push(prev[p])
		push(p)
	}
	out := ids[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, ids[i])
	}
	return out
}

// candidates is a binary min-heap of rank<<32|position keys, written out
// rather than used through container/heap, whose interface boxes values.
type candidates []uint64

func (h *candidates) push(c uint64) {
	*h = append(*h, c)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p] <= a[i] {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *candidates) pop() uint64 {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < len(a) && a[l] < a[small] {
			small = l
		}
		if r := l + 1; r < len(a) && a[r] < a[small] {
			small = r
		}
		if small == i {
			break
		}
		a[i], a[small] = a[small], a[i]
		i = small
	}
	*h = a
	return top
}

// pieceCache remembers the encoding of recent pieces. It is sharded so
// goroutines encoding at once rarely wait on each other, and each shard is
// dropped whole when full, which bounds memory without bookkeeping.
type pieceCache struct {
	seed   maphash.Seed
	shards [64]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

const (
	cacheShardSize = 4096
	cacheMaxPiece  = 256
)

func newPieceCache() *pieceCache { return &pieceCache{seed: maphash.MakeSeed()} }

func (c *pieceCache) shard(s string) *cacheShard {
	return &c.shards[maphash.String(c.seed, s)%uint64(len(c.shards))]
}

func (c *pieceCache) get(s string) ([]int32, bool) {
	if len(s) > cacheMaxPiece {
		return nil, false
	}
	sh := c.shard(s)
	sh.mu.RLock()
	ids, ok := sh.m[s]
	sh.mu.RUnlock()
	return ids, ok
}

func (c *pieceCache) put(s string, ids []int32) {
	if len(s) > cacheMaxPiece {
		return
	}
	own := append([]int32(nil), ids...)
	sh := c.shard(s)
	sh.mu.Lock()
	if sh.m == nil || len(sh.m) >= cacheShardSize {
		sh.m = make(map[string][]int32, 256)
	}
	sh.m[strings.Clone(s)] = own
	sh.mu.Unlock()
}

// checkModel rejects BPE settings this package does not implement.
func checkModel(mod *hfModel) error {
	if mod.Type != "BPE" && mod.Type != "" {
		return fmt.Errorf("model: unsupported type %q (only BPE)", mod.Type)
	}
	if mod.Dropout != nil && *mod.Dropout != 0 {
		return fmt.Errorf("model BPE: unsupported dropout %v", *mod.Dropout)
	}
	if p := mod.ContinuingSubwordPrefix; p != nil && *p != "" {
		return fmt.Errorf("model BPE: unsupported continuing_subword_prefix %q", *p)
	}
	if p := mod.EndOfWordSuffix; p != nil && *p != "" {
		return fmt.Errorf("model BPE: unsupported end_of_word_suffix %q", *p)
	}
	return nil
}
