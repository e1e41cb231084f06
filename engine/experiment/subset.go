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
// per-image field is carried along. kept[i] is the index in x of the subset's image i
// (every index of x when all are kept), which `pfl partition -c` exports.
func subset(x *data.Images, n int, seed uint64, purpose string, stratified bool) (y *data.Images, kept []int, err error) {
	if n <= 0 || n >= x.N {
		kept = make([]int, x.N)
		for i := range kept {
			kept[i] = i
		}
		return x, kept, nil
	}
	if n < 10 {
		return nil, nil, fmt.Errorf("%s: keep %d images, want at least 10", purpose, n)
	}
	perm := rng.New(rng.Key{Seed: seed, Purpose: purpose, Round: -1, Client: -1}).Perm(x.N)
	pick := perm[:n]
	if stratified {
		if n%x.Classes != 0 {
			return nil, nil, fmt.Errorf("%s: %d images do not split evenly over %d classes (data.stratified)", purpose, n, x.Classes)
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
			return nil, nil, fmt.Errorf("%s: a class has fewer than %d images (data.stratified)", purpose, per)
		}
	}
	slices.Sort(pick)
	out := *x
	per := x.C * x.H * x.W
	out.N = n
	out.Pixels = make([]uint8, 0, n*per)
	out.Labels = make([]int64, 0, n)
	out.Coarse, out.Domains = nil, nil
	for _, i := range pick {
		out.Pixels = append(out.Pixels, x.Pixels[i*per:(i+1)*per]...)
		out.Labels = append(out.Labels, x.Labels[i])
		if x.Coarse != nil {
			out.Coarse = append(out.Coarse, x.Coarse[i])
		}
		if x.Domains != nil {
			out.Domains = append(out.Domains, x.Domains[i])
		}
	}
	return &out, pick, out.Validate()
}
