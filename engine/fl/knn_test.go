package fl

import (
	"math"
	"sort"
	"testing"

	"pfl/cuda"
)

// TestKNNLogitsMatchAReference checks the stacked KNN mixture against plain loops: squared
// L2 distances to each client's own valid memory slots, the k nearest voting with
// exp(−d/dim), the vote normalized and mixed 0.6/0.4 with the softmax.
func TestKNNLogitsMatchAReference(t *testing.T) {
	const k, b, m, d, c = 2, 3, 5, 4, 3
	s := cuda.NewScope()
	defer s.Close()
	g, _ := cuda.NewGenerator(4, cuda.CPU)
	defer g.Close()
	f := s.Randn(g, cuda.Float64, cuda.CPU, k, b, d)
	feat := s.Randn(g, cuda.Float64, cuda.CPU, k, m, d)
	logits := s.Randn(g, cuda.Float64, cuda.CPU, k, b, c)
	ys := []int64{0, 2, 2, 1, 0, 1, 1, 0, 2, 2}
	masks := []float32{1, 1, 1, 1, 1, 1, 1, 1, 0, 0} // client 1 has 3 training samples
	mem := &Embedded{Feat: feat, Y: cuda.FromSlice(s, cuda.CPU, ys, k, m), Mask: cuda.FromSlice(s, cuda.CPU, masks, k, m)}
	cfg := KNN{K: 4, Weight: 0.6}
	got, err := knnLogits(s, cfg, mem, f, logits).Float64s()
	if err != nil || s.Err() != nil {
		t.Fatal(err, s.Err())
	}
	fv, _ := f.Float64s()
	mv, _ := feat.Float64s()
	lv, _ := logits.Float64s()
	for ki := 0; ki < k; ki++ {
		for bi := 0; bi < b; bi++ {
			type nb struct {
				d float64
				y int64
			}
			var nbs []nb
			for mi := 0; mi < m; mi++ {
				if masks[ki*m+mi] == 0 {
					continue
				}
				var dd float64
				for e := 0; e < d; e++ {
					x := fv[(ki*b+bi)*d+e] - mv[(ki*m+mi)*d+e]
					dd += x * x
				}
				nbs = append(nbs, nb{dd, ys[ki*m+mi]})
			}
			sort.Slice(nbs, func(i, j int) bool { return nbs[i].d < nbs[j].d })
			vote := make([]float64, c)
			var total float64
			for _, n := range nbs[:min(cfg.K, len(nbs))] {
				w := math.Exp(-n.d / d)
				vote[n.y] += w
				total += w
			}
			var z float64
			row := lv[(ki*b+bi)*c : (ki*b+bi+1)*c]
			for _, v := range row {
				z += math.Exp(v)
			}
			for ci := 0; ci < c; ci++ {
				want := math.Log(cfg.Weight*vote[ci]/total + (1-cfg.Weight)*math.Exp(row[ci])/z)
				if gv := got[(ki*b+bi)*c+ci]; math.Abs(gv-want) > 1e-9 {
					t.Fatalf("client %d sample %d class %d: %g, want %g", ki, bi, ci, gv, want)
				}
			}
		}
	}
}
