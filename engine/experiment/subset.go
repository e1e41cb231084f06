package experiment

import (
	"fmt"
	"slices"

	"pfl/engine/data"
	"pfl/engine/rng"
)

// subset keeps n images of x drawn without replacement from the (seed, purpose) stream, in
// their original order (n <= 0 or n >= x.N keeps all): small, reproducible versions of a
// dataset for demos and tests. Stratified, it keeps n/classes images of every class (the
// first of each class in the stream's order; n must be a multiple of the classes). Every
// per-image field is carried along.
func subset(x *data.Images, n int, seed uint64, purpose string, stratified bool) (*data.Images, error) {
	if n <= 0 || n >= x.N {
		return x, nil
	}
	if n < 10 {
		return nil, fmt.Errorf("%s: keep %d images, want at least 10", purpose, n)
	}
	perm := rng.New(rng.Key{Seed: seed, Purpose: purpose, Round: -1, Client: -1}).Perm(x.N)
	pick := perm[:n]
	if stratified {
		if n%x.Classes != 0 {
			return nil, fmt.Errorf("%s: %d images do not split evenly over %d classes (data.stratified)", purpose, n, x.Classes)
		}
		per, count := n/x.Classes, make([]int, x.Classes)
		pick = pick[:0:0]
		for _, i := range perm {
			if c := x.Labels[i]; count[c] < per {
				count[c]++
				pick = append(pick, i)
			}
		}
		if len(pick) != n {
			return nil, fmt.Errorf("%s: a class has fewer than %d images (data.stratified)", purpose, per)
		}
	}
	slices.Sort(pick)
	y := *x
	per := x.C * x.H * x.W
	y.N = n
	y.Pixels = make([]uint8, 0, n*per)
	y.Labels = make([]int64, 0, n)
	y.Coarse, y.Domains = nil, nil
	for _, i := range pick {
		y.Pixels = append(y.Pixels, x.Pixels[i*per:(i+1)*per]...)
		y.Labels = append(y.Labels, x.Labels[i])
		if x.Coarse != nil {
			y.Coarse = append(y.Coarse, x.Coarse[i])
		}
		if x.Domains != nil {
			y.Domains = append(y.Domains, x.Domains[i])
		}
	}
	return &y, y.Validate()
}
