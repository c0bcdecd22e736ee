package sim

import "math"

// rng is splitmix64: a tiny generator whose output is fixed by its
// definition, so answers cannot change with a Go release the way
// math/rand's derived distributions might.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a uniform float in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// intn returns a uniform int in [0, n).
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// norm returns a standard normal deviate (Box-Muller).
func (r *rng) norm() float64 {
	u := 1 - r.float() // (0, 1]: log stays finite
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.float())
}

// mix folds v into a running hash.
func mix(h, v uint64) uint64 {
	r := rng{h ^ v*0x9e3779b97f4a7c15}
	return r.next()
}
