package experiment

import (
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
		y, err := subset(x, c.n, 3, "subset/test", c.stratified)
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
		if y.N != c.n {
			t.Fatalf("kept %d, want %d", y.N, c.n)
		}
	}
}
