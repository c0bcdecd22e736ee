package stages

import (
	"encoding/binary"
	"hash/fnv"
)

// SeededHash hashes parts under a seed into a well-mixed 64-bit value: the
// basis of seeded sampling and shuffling, stable across runs and machines.
func SeededHash(seed int, parts ...string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	// splitmix64's finalizer: FNV alone leaves similar keys with similar
	// high bits, which skews fractions and ranks.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
