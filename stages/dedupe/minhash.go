package dedupe

import "math"

// minHasher makes MinHash signatures of word shingles. A signature keeps one
// byte of each minimum (b-bit MinHash): a million prompts at 128
// permutations hold 128 MB instead of 1 GB, and the chance that two
// different minima agree by accident (1/256) is taken out of the estimate.
type minHasher struct {
	shingle int
	a, b    []uint64 // the permutations x -> a*x + b (a odd: a bijection of uint64)
	mins    []uint64
}

func newMinHasher(numPerm, shingle int) *minHasher {
	m := &minHasher{shingle: shingle, a: make([]uint64, numPerm), b: make([]uint64, numPerm), mins: make([]uint64, numPerm)}
	for i := range numPerm {
		m.a[i] = mix(uint64(2*i+1)) | 1
		m.b[i] = mix(uint64(2*i + 2))
	}
	return m
}

// sign appends the signature of the shingles of words to dst; ok is false
// when there are no words. A text shorter than a shingle is one shingle.
func (m *minHasher) sign(dst []byte, words []uint64) (_ []byte, ok bool) {
	if len(words) == 0 {
		return dst, false
	}
	for i := range m.mins {
		m.mins[i] = math.MaxUint64
	}
	add := func(h uint64, _ int) bool {
		for i, a := range m.a {
			if v := a*h + m.b[i]; v < m.mins[i] {
				m.mins[i] = v
			}
		}
		return true
	}
	eachGram(words, min(m.shingle, len(words)), add)
	for _, v := range m.mins {
		dst = append(dst, byte(mix(v)))
	}
	return dst, true
}

// similarity estimates the Jaccard similarity of two signatures: the share
// of equal bytes, less the share that equal by chance.
func similarity(x, y []byte) float64 {
	eq := 0
	for i := range x {
		if x[i] == y[i] {
			eq++
		}
	}
	const chance = 1.0 / 256
	return max(0, (float64(eq)/float64(len(x))-chance)/(1-chance))
}

// lshParams chooses bands and rows per band (bands*rows <= numPerm) so that
// pairs above threshold become candidates and pairs below do not, as
// datasketch's MinHashLSH does: the probability that a pair of similarity
// s shares a band is 1-(1-s^rows)^bands. Every candidate is verified, so a
// false candidate costs one comparison while a missed pair costs a
// generation: misses weigh 0.9, false candidates 0.1 (datasketch weighs
// them alike, and finds 40% of pairs at the threshold; this finds 87%).
func lshParams(threshold float64, numPerm int) (bands, rows int) {
	integrate := func(f func(float64) float64, a, b float64) float64 {
		const steps = 200
		w := (b - a) / steps
		sum := 0.0
		for i := range steps {
			sum += f(a+(float64(i)+0.5)*w) * w
		}
		return sum
	}
	best := math.Inf(1)
	for b := 1; b <= numPerm; b++ {
		for r := 1; b*r <= numPerm; r++ {
			p := func(s float64) float64 { return 1 - math.Pow(1-math.Pow(s, float64(r)), float64(b)) }
			fp := integrate(p, 0, threshold)
			fn := integrate(func(s float64) float64 { return 1 - p(s) }, threshold, 1)
			if e := 0.1*fp + 0.9*fn; e < best {
				best, bands, rows = e, b, r
			}
		}
	}
	return bands, rows
}

// unionFind groups records; the root of a group is its best-ranked member,
// the one that survives.
type unionFind struct {
	parent []uint32
	// pos is each record's place in survival order (dataset priority, then key).
	pos []uint32
}

func (u *unionFind) find(i uint32) uint32 {
	for u.parent[i] != i {
		u.parent[i] = u.parent[u.parent[i]]
		i = u.parent[i]
	}
	return i
}

func (u *unionFind) union(i, j uint32) {
	ri, rj := u.find(i), u.find(j)
	if ri == rj {
		return
	}
	if u.pos[rj] < u.pos[ri] {
		ri, rj = rj, ri
	}
	u.parent[rj] = ri
}
