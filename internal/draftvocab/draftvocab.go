// Package draftvocab chooses an EAGLE-3 drafter's reduced vocabulary from
// the frequencies of the supervised token ids, and writes it in the files
// the trainers load: d2t and t2d as NumPy arrays (speculators' train.py
// --d2t-path/--t2d-path) and the frequencies as JSON (speculators'
// token_freq.pt and SpecForge's vocab_mapping.pt are torch pickles, which
// only torch writes faithfully; docs/handoff.md converts them).
package draftvocab

import (
	"fmt"
	"slices"
)

// Counts holds how often each token id is supervised (loss mask 1).
type Counts map[int]int64

// Add counts the ids under a loss mask of 1; ids and mask are a row's.
func (c Counts) Add(ids, mask []int) {
	for i, id := range ids {
		if i < len(mask) && mask[i] == 1 {
			c[id]++
		}
	}
}

// Total is the number of supervised tokens counted.
func (c Counts) Total() int64 {
	var n int64
	for _, f := range c {
		n += f
	}
	return n
}

// Mapping is a draft vocabulary: the target ids it keeps, in ascending
// order, and how many of the counted tokens they cover.
type Mapping struct {
	Size, TargetSize int
	// Selected are the kept target ids, ascending: draft id i is target
	// id Selected[i].
	Selected []int
	// Covered counts the supervised tokens whose id is kept, of Total.
	Covered, Total int64
	// Distinct counts the distinct supervised ids.
	Distinct int
}

// Build keeps the size most frequent ids, ties going to the lower id as in
// speculators' build_vocab_mappings_from_distribution; with fewer distinct
// ids than size the lowest unused ids fill the rest, as both speculators
// and SpecForge do. An id outside the target vocabulary is an error: the
// trainers index t2d with it.
func Build(c Counts, size, targetSize int) (*Mapping, error) {
	if size < 1 || size > targetSize {
		return nil, fmt.Errorf("draft vocabulary of %d ids for a target of %d: want 1 to %d", size, targetSize, targetSize)
	}
	ids := make([]int, 0, len(c))
	for id := range c {
		if id < 0 || id >= targetSize {
			return nil, fmt.Errorf("token id %d is outside the target vocabulary of %d ids (is target_size the model's config.json vocab_size?)", id, targetSize)
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int) int {
		if c[a] != c[b] {
			if c[a] > c[b] {
				return -1
			}
			return 1
		}
		return a - b
	})
	m := &Mapping{Size: size, TargetSize: targetSize, Total: c.Total(), Distinct: len(ids)}
	kept := ids[:min(size, len(ids))]
	for _, id := range kept {
		m.Covered += c[id]
	}
	in := make(map[int]bool, len(kept))
	for _, id := range kept {
		in[id] = true
	}
	for id := 0; len(kept) < size; id++ {
		if !in[id] {
			kept = append(kept, id)
		}
	}
	m.Selected = slices.Clone(kept)
	slices.Sort(m.Selected)
	return m, nil
}

// Coverage is the share of supervised tokens inside the draft vocabulary
// (0 when none were counted).
func (m *Mapping) Coverage() float64 {
	if m.Total == 0 {
		return 0
	}
	return float64(m.Covered) / float64(m.Total)
}

// D2T is the draft-to-target offsets: target id = draft id + D2T[draft id].
func (m *Mapping) D2T() []int64 {
	d := make([]int64, len(m.Selected))
	for i, id := range m.Selected {
		d[i] = int64(id - i)
	}
	return d
}

// T2D marks, over the whole target vocabulary, the ids kept.
func (m *Mapping) T2D() []bool {
	t := make([]bool, m.TargetSize)
	for _, id := range m.Selected {
		t[id] = true
	}
	return t
}
