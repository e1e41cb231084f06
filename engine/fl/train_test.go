package fl

import (
	"fmt"
	"math"
	"testing"

	"pfl/cuda"
)

// TestSGDMatchesTorchPerClient checks the stacked multi-tensor SGD against torch.optim.SGD's
// update written out per client in plain Go (d = g + λp; buf = μ·buf + d; p −= lr·buf), with
// clients dropping out (a_k = 0) part-way: an inactive client neither decays nor moves, and
// its momentum buffer waits.
func TestSGDMatchesTorchPerClient(t *testing.T) {
	const k = 3
	shapes := [][]int64{{k, 2, 3}, {k, 4}, {k, 1, 2, 2}} // ranks 3, 2 and 4
	active := [][]float32{{1, 1, 1}, {1, 0, 1}, {0, 0, 1}, {1, 0, 1}}
	for _, c := range []struct{ lr, mom, wd float64 }{{0.1, 0, 0}, {0.1, 0, 0.01}, {0.05, 0.9, 0}, {0.05, 0.9, 0.001}} {
		t.Run(fmt.Sprintf("lr%g_mom%g_wd%g", c.lr, c.mom, c.wd), func(t *testing.T) {
			s := cuda.NewScope()
			defer s.Close()
			g, _ := cuda.NewGenerator(7, cuda.CPU)
			defer g.Close()
			var params []*cuda.Tensor
			var ref, buf [][]float64
			for _, sh := range shapes {
				p := s.Randn(g, cuda.Float64, cuda.CPU, sh...)
				v, _ := p.Float64s()
				params, ref, buf = append(params, p), append(ref, v), append(buf, make([]float64, len(v)))
			}
			opt := &sgd{lr: c.lr, momentum: c.mom, wd: c.wd}
			defer opt.Close()
			for step, act := range active {
				var grads []*cuda.Tensor
				for i, sh := range shapes {
					gr := s.Randn(g, cuda.Float64, cuda.CPU, sh...)
					gv, _ := gr.Float64s()
					before := append([]float64(nil), gv...)
					grads = append(grads, gr)
					per := len(gv) / k
					for j := range gv {
						if act[j/per] == 0 {
							continue
						}
						d := gv[j] + c.wd*ref[i][j]
						if c.mom != 0 {
							buf[i][j] = c.mom*buf[i][j] + d
							if step == 0 {
								buf[i][j] = d
							}
							d = buf[i][j]
						}
						ref[i][j] -= c.lr * d
					}
					defer func(gr *cuda.Tensor, want []float64) {
						if got, _ := gr.Float64s(); fmt.Sprint(got) != fmt.Sprint(want) {
							t.Error("the step changed a gradient tensor")
						}
					}(gr, before)
				}
				opt.Step(s, params, grads, cuda.FromSlice(s, cuda.CPU, act))
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			for i, p := range params {
				got, _ := p.Float64s()
				for j := range got {
					if d := math.Abs(got[j] - ref[i][j]); d > 1e-13 {
						t.Fatalf("param %d element %d: %.17g, torch's update %.17g", i, j, got[j], ref[i][j])
					}
				}
			}
		})
	}
}
