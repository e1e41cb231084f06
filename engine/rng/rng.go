// Package rng derives every random stream of a run from (seed, purpose, round, client), so
// that a run is reproducible from its seed, and so that a client's draws (its batch order,
// augmentation, dropout) do not depend on which other clients share a round or a stack.
package rng

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// Key names one stream.
type Key struct {
	Seed    uint64
	Purpose string // e.g. "partition", "sample", "batch", "augment", "dropout", "init"
	Round   int    // -1 when the stream is not per round
	Client  int    // -1 when the stream is not per client
}

// Derive mixes k into a 64-bit seed with FNV-1a and SplitMix64, so nearby keys give
// unrelated seeds.
func Derive(k Key) uint64 {
	h := fnv.New64a()
	h.Write([]byte(k.Purpose))
	x := h.Sum64() ^ splitmix(k.Seed)
	x = splitmix(x ^ uint64(int64(k.Round)))
	return splitmix(x ^ splitmix(uint64(int64(k.Client))+0x632be59bd9b4e019))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// New returns the Go generator of stream k.
func New(k Key) *rand.Rand {
	s := Derive(k)
	return rand.New(rand.NewPCG(s, splitmix(s)))
}

// Gamma draws from Gamma(shape, 1) (Marsaglia and Tsang, 2000; for shape < 1 the boost
// Gamma(shape+1)·U^(1/shape)).
func Gamma(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return Gamma(r, shape+1) * math.Pow(r.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Dirichlet draws a point of the simplex from Dir(alpha·1_n).
func Dirichlet(r *rand.Rand, alpha float64, n int) []float64 {
	p := make([]float64, n)
	var sum float64
	for i := range p {
		p[i] = Gamma(r, alpha)
		sum += p[i]
	}
	if sum == 0 { // every draw underflowed (tiny alpha): put the mass on one point
		p[r.IntN(n)] = 1
		return p
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}
