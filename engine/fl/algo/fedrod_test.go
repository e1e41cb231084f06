package algo

import (
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// TestFedRoDHeads checks FedRoD's split and its loss: only the personal head is personal;
// the body and generic head get exactly the gradient of the balanced-softmax loss (the
// personal loss reaches neither), and the personal head gets the gradient of
// CE(generic.detach() + personal) alone.
func TestFedRoDHeads(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodPathological, Clients: 4, ClassesPerClient: 2, Seed: 1})
	f := &FedRoD{}
	defer f.Close()
	if err := f.Bind(fl.Env{Fed: st.Fed, Device: cuda.CPU, DType: cuda.Float64}); err != nil {
		t.Fatal(err)
	}
	g, _ := cuda.NewGenerator(3, cuda.CPU)
	defer g.Close()
	inner, err := fltest.ConvnetAs(16, 1, 4, false, cuda.Float64)(2, g)
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := f.Wrap(inner, fl.Wrapping{Gen: g})
	if err != nil {
		t.Fatal(err)
	}
	defer wrapped.Close()
	two, err := model.TwoHeadsOf(wrapped)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range two.Params().List {
		if f.Personal(p) != (p.Role == model.RolePersonalHead) {
			t.Errorf("%s personal=%v", p.Name, f.Personal(p))
		}
	}
	s := cuda.NewScope()
	defer s.Close()
	x := s.Randn(g, cuda.Float64, cuda.CPU, 2, 5, 1, 16, 16)
	y := cuda.FromSlice(s, cuda.CPU, []int64{0, 1, 2, 3, 0, 1, 1, 2, 3, 3}, 2, 5)
	mask := cuda.FromSlice(s, cuda.CPU, []float32{1, 1, 1, 1, 0, 1, 1, 1, 1, 1}, 2, 5)
	clients := []int{1, 3}
	b := fl.Batch{X: x, Y: y, Mask: mask, Clients: clients, Rows: cuda.FromSlice(s, cuda.CPU, []int64{1, 3})}
	params := model.Tensors(two.Params().Trainable())
	got := s.Grad([]*cuda.Tensor{s.Sum(f.Loss(s, two, b, nil), false)}, nil, params, cuda.GradOptions{AllowUnused: true})

	// the two losses written out with the client's label counts counted here
	counts := make([]float64, 2*4)
	for row, c := range clients {
		for _, i := range st.Fed.Part.Train[c] {
			counts[row*4+int(st.Fed.Train.Labels[i])]++
		}
	}
	for i, v := range counts {
		counts[i] = math.Log(math.Max(v, 1e-12))
	}
	logc := s.Unsqueeze(cuda.FromSlice(s, cuda.CPU, counts, 2, 4), 1)
	feat := two.Features(s, x, nil)
	generic := two.GenericHead(s, feat, nil)
	balanced := s.Sum(fl.MeanCrossEntropy(s, s.Add(generic, logc), y, mask), false)
	personal := s.Sum(fl.MeanCrossEntropy(s, s.Add(s.Detach(generic), two.PersonalHead(s, s.Detach(feat), nil)), y, mask), false)
	wantG := s.Grad([]*cuda.Tensor{balanced}, nil, params, cuda.GradOptions{AllowUnused: true, RetainGraph: true})
	wantP := s.Grad([]*cuda.Tensor{personal}, nil, params, cuda.GradOptions{AllowUnused: true})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i, p := range two.Params().Trainable() {
		want := wantG[i]
		if p.Role == model.RolePersonalHead {
			if wantG[i] != nil {
				t.Fatalf("%s: the balanced loss reaches the personal head", p.Name)
			}
			want = wantP[i]
		} else if wantP[i] != nil {
			t.Fatalf("%s: the personal loss reaches %s", p.Name, p.Role)
		}
		if got[i] == nil || want == nil {
			t.Fatalf("%s: no gradient", p.Name)
		}
		a, _ := got[i].Float64s()
		e, _ := want.Float64s()
		for j := range a {
			if math.Abs(a[j]-e[j]) > 1e-12 {
				t.Fatalf("%s[%d]: gradient %g, want %g", p.Name, j, a[j], e[j])
			}
		}
	}
}

// TestFedRoDPersonalHeadTakesPlainSGD: two steps with a constant gradient g, momentum μ and
// weight decay λ: the body moves by lr·g·(2 + μ) plus its decay, the personal head by
// exactly 2·lr·g (no momentum, no decay), as the official code's separate plain SGD.
func TestFedRoDPersonalHeadTakesPlainSGD(t *testing.T) {
	f := &FedRoD{}
	g, _ := cuda.NewGenerator(3, cuda.CPU)
	defer g.Close()
	inner, err := fltest.ConvnetAs(16, 1, 4, false, cuda.Float64)(2, g)
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Wrap(inner, fl.Wrapping{Gen: g})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const lr, mu, wd = 0.1, 0.9, 0.01
	opt := f.Optimizer(0, fl.SGDConfig{LR: lr, Momentum: mu, WeightDecay: wd})
	defer opt.Close()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	var params, grads []*cuda.Tensor
	var before [][]float64
	for _, p := range m.Params().List {
		params = append(params, p.T)
		grads = append(grads, s.AddScalar(s.MulScalar(p.T, 0), 1)) // g = 1 everywhere
		v, _ := p.T.Float64s()
		before = append(before, v)
	}
	active := cuda.FromSlice(s, cuda.CPU, []float32{1, 1})
	for range 2 {
		opt.Step(s, params, grads, active)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i, p := range m.Params().List {
		after, _ := p.T.Float64s()
		for e := range after {
			w0 := before[i][e]
			var want float64
			if p.Role == model.RolePersonalHead {
				want = w0 - 2*lr
			} else { // torch's SGD: buf1 = g + λw0; w1 = w0 − lr·buf1; buf2 = μ·buf1 + g + λw1
				b1 := 1 + wd*w0
				w1 := w0 - lr*b1
				want = w1 - lr*(mu*b1+1+wd*w1)
			}
			if math.Abs(after[e]-want) > 1e-12 {
				t.Fatalf("%s[%d] = %.15g, want %.15g", p.Name, e, after[e], want)
			}
		}
	}
}
