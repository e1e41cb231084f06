package data

import (
	"fmt"
	"math/rand/v2"
)

// syntheticNoise is the standard deviation of Synthetic's per-pixel Gaussian noise.
const syntheticNoise = 48

// Synthetic returns n class-conditional c×h×w images for tests and benchmarks: each of
// the classes has a fixed random mean image (uniform uint8 pixels), each sample is its
// class's mean plus Gaussian noise of standard deviation 48, rounded and clamped to
// [0, 255], and labels are uniform over the classes. The result depends only on the
// arguments (math/rand/v2's PCG seeded with seed). It panics if n is negative or c, h,
// w or classes is not positive, as those are programming errors.
func Synthetic(name string, n, c, h, w, classes int, seed uint64) *Images {
	if n < 0 || c <= 0 || h <= 0 || w <= 0 || classes <= 0 {
		panic(fmt.Sprintf("data: Synthetic(%q): bad size n=%d c=%d h=%d w=%d classes=%d", name, n, c, h, w, classes))
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	d := c * h * w
	means := make([]uint8, classes*d)
	for i := range means {
		means[i] = uint8(rng.UintN(256))
	}
	x := &Images{Name: name, N: n, C: c, H: h, W: w, Classes: classes,
		Pixels: make([]uint8, n*d), Labels: make([]int64, n)}
	for i := range n {
		l := rng.IntN(classes)
		x.Labels[i] = int64(l)
		mean, out := means[l*d:(l+1)*d], x.Pixels[i*d:(i+1)*d]
		for j, m := range mean {
			v := float64(m) + syntheticNoise*rng.NormFloat64() + 0.5
			out[j] = uint8(max(0, min(255, v)))
		}
	}
	if err := x.Validate(); err != nil {
		panic(err) // unreachable: the sizes were checked above
	}
	return x
}
