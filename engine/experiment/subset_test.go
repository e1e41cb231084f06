package experiment

import (
	"slices"
	"testing"

	"pfl/engine/data"
)

func TestStratifiedSubsetKeepsEveryClassEqually(t *testing.T) {
	x := data.Synthetic("s", 1000, 1, 4, 4, 10, 1)
	for _, c := range []struct {
		n          int
		stratified bool
		ok         bool
	}{{100, true, true}, {105, true, false}, {100, false, true}} {
		y, kept, err := subset(x, c.n, 3, "subset/test", c.stratified)
		if (err == nil) != c.ok {
			t.Fatalf("n %d stratified %v: %v", c.n, c.stratified, err)
		}
		if err != nil {
			continue
		}
		count := make([]int, x.Classes)
		for _, l := range y.Labels {
			count[l]++
		}
		for cl, k := range count {
			if c.stratified && k != c.n/x.Classes {
				t.Fatalf("class %d kept %d images, want %d", cl, k, c.n/x.Classes)
			}
		}
		if y.N != c.n || len(kept) != c.n {
			t.Fatalf("kept %d images and %d indices, want %d", y.N, len(kept), c.n)
		}
		for i, j := range kept { // kept names each image's place in x
			if y.Labels[i] != x.Labels[j] || !slices.Equal(y.Pixels[i*16:(i+1)*16], x.Pixels[j*16:(j+1)*16]) {
				t.Fatalf("image %d: kept[%d] = %d is not the image kept", i, i, j)
			}
		}
	}
}
