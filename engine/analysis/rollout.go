// Package analysis computes the figures that look inside trained models, on the host in
// float64: attention rollout maps (FedTP Fig. 1, 5, 6), focal modulation maps (TransFed
// Fig. 1), heat maps overlaid on the input image, and an exact t-SNE of the client
// embeddings (FedTP Fig. 9).
package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Fusion is how a block's attention heads are fused into one matrix before rollout.
type Fusion string

// Head fusions.
const (
	FusionMax  Fusion = "max"  // the element-wise maximum over heads (FedTP's maps)
	FusionMean Fusion = "mean" // the mean over heads (Abnar & Zuidema's rollout)
)

// RolloutOptions choose the rollout's variant.
type RolloutOptions struct {
	Fusion Fusion // "" reads as max
	// Discard is the fraction of the fused T×T matrix's entries, the smallest, set to zero
	// before the identity is added (FedTP's variant: 0.3); 0 keeps every entry.
	Discard float64
}

// Attention is one block's attention probabilities for one image: Heads matrices of
// T×T, row-major ([head][query][key]).
type Attention struct {
	Heads, T int
	P        []float64
}

// Rollout is attention rollout over blocks (Abnar & Zuidema, 2020) in the variant of
// jacobgil/vit-explain that FedTP's figures use: per block the heads are fused (max or
// mean), the smallest ⌊Discard·T²⌋ entries of the fused matrix are set to zero (the class
// token's attention to itself, entry 0, is never discarded, as there; ties are taken in
// row-major order), A is replaced by (A + I)/2 with its rows normalized to sum to 1, and
// the blocks are multiplied, the last on the left: R = Â_L ⋯ Â_1. It returns R's first
// row, the class token's attention over the T tokens (itself first). vit-explain divides
// by a.sum(dim=-1) without keepdim, which broadcasts column j over row j's sum; pfl
// normalizes rows, as rollout is defined.
func Rollout(blocks []Attention, o RolloutOptions) ([]float64, error) {
	if len(blocks) == 0 {
		return nil, fmt.Errorf("analysis: rollout of no blocks")
	}
	if !(o.Discard >= 0 && o.Discard < 1) {
		return nil, fmt.Errorf("analysis: rollout: discard %g not in [0, 1)", o.Discard)
	}
	fusion := cmp.Or(o.Fusion, FusionMax)
	if fusion != FusionMax && fusion != FusionMean {
		return nil, fmt.Errorf("analysis: rollout: fusion %q (max or mean)", o.Fusion)
	}
	t := blocks[0].T
	var r []float64 // the rollout so far, T×T
	for bi, b := range blocks {
		if b.T != t || b.Heads < 1 || len(b.P) != b.Heads*t*t {
			return nil, fmt.Errorf("analysis: rollout: block %d holds %d values for %d heads of %d×%d (block 0: %d tokens)", bi, len(b.P), b.Heads, b.T, b.T, t)
		}
		a := fuse(b, fusion)
		discard(a, int(o.Discard*float64(t*t)))
		for i := 0; i < t; i++ {
			row := a[i*t : (i+1)*t]
			row[i]++
			var sum float64
			for _, v := range row {
				sum += v
			}
			for j := range row {
				row[j] /= sum // (A + I)/2 normalized: the halves cancel
			}
		}
		if r == nil {
			r = a
		} else {
			r = matmul(a, r, t)
		}
	}
	return r[:t], nil
}

// fuse fuses b's heads into one T×T matrix.
func fuse(b Attention, f Fusion) []float64 {
	n := b.T * b.T
	out := slices.Clone(b.P[:n])
	for h := 1; h < b.Heads; h++ {
		for i, v := range b.P[h*n : (h+1)*n] {
			if f == FusionMax {
				out[i] = math.Max(out[i], v)
			} else {
				out[i] += v
			}
		}
	}
	if f == FusionMean {
		for i := range out {
			out[i] /= float64(b.Heads)
		}
	}
	return out
}

// discard zeroes the n smallest entries of a (ties in index order), entry 0 excepted.
func discard(a []float64, n int) {
	if n <= 0 {
		return
	}
	idx := make([]int, len(a))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(a[x], a[y]) })
	for _, i := range idx[:n] {
		if i != 0 {
			a[i] = 0
		}
	}
}

// matmul is the T×T product a·b.
func matmul(a, b []float64, t int) []float64 {
	out := make([]float64, t*t)
	for i := 0; i < t; i++ {
		for k := 0; k < t; k++ {
			aik := a[i*t+k]
			for j := 0; j < t; j++ {
				out[i*t+j] += aik * b[k*t+j]
			}
		}
	}
	return out
}

// Restrict keeps, of an attention block over S keys for T queries ([heads][T][S]), the
// queries and keys listed (indices into T and S), renormalizing each kept row to sum to
// 1. Rollout multiplies blocks over one set of tokens: the class token and the patches
// persist from block to block, while prompt tokens (inserted fresh in every block) and the
// concat form's prefix keys do not, so their attention is dropped.
func Restrict(p []float64, heads, t, s int, queries, keys []int) (Attention, error) {
	if len(p) != heads*t*s {
		return Attention{}, fmt.Errorf("analysis: %d values for %d heads of %d×%d", len(p), heads, t, s)
	}
	if len(queries) != len(keys) {
		return Attention{}, fmt.Errorf("analysis: %d queries kept, %d keys: rollout needs the same tokens", len(queries), len(keys))
	}
	n := len(keys)
	out := Attention{Heads: heads, T: n, P: make([]float64, heads*n*n)}
	for h := 0; h < heads; h++ {
		for i, q := range queries {
			row := out.P[(h*n+i)*n : (h*n+i+1)*n]
			var sum float64
			for j, k := range keys {
				row[j] = p[(h*t+q)*s+k]
				sum += row[j]
			}
			if sum > 0 {
				for j := range row {
					row[j] /= sum
				}
			}
		}
	}
	return out, nil
}

// Normalize scales v into [0, 1]: divided by its maximum (Rollout's maps, as
// vit-explain), or min-max when minMax. All equal (or all zero) gives zeros.
func Normalize(v []float64, minMax bool) []float64 {
	lo, hi := slices.Min(v), slices.Max(v)
	if !minMax {
		lo = 0
	}
	out := make([]float64, len(v))
	if hi-lo <= 0 || math.IsNaN(hi-lo) {
		return out
	}
	for i, x := range v {
		out[i] = (x - lo) / (hi - lo)
	}
	return out
}

// Magnitude is the L2 norm over channels at each position of a [C, H·W] map (the
// modulator of a focal-modulation block), [H·W].
func Magnitude(m []float64, c, hw int) []float64 {
	out := make([]float64, hw)
	for ch := 0; ch < c; ch++ {
		for i, v := range m[ch*hw : (ch+1)*hw] {
			out[i] += v * v
		}
	}
	for i := range out {
		out[i] = math.Sqrt(out[i])
	}
	return out
}
