package model_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/model"
	"pfl/internal/golden"
)

// digit5Pattern is scripts/golden/pfllib_digit5.py's pattern: ((mul·i + add·j) mod mod) /
// half − 1 for the n elements of tensor j, mapped to b + a·v. The integer arithmetic, one
// correctly rounded division and a product rounded before the sum (float64(…) keeps Go from
// fusing it into an FMA) give PyTorch's bits.
func digit5Pattern(n, j int, mul, add, mod int64, half, a, b float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		v := float64((int64(i)*mul+add*int64(j))%mod)/half - 1
		out[i] = b + float64(a*v)
	}
	return out
}

// TestDigit5CNNMatchesPFLlib holds pfl's digit5cnn to PFLlib's own Digit5CNN, imported
// unmodified from a PFLlib checkout by scripts/golden/pfllib_digit5.py: the parameter names,
// shapes and order, a training-mode forward and backward with batch statistics (dropout
// off on both sides), the running statistics that pass leaves, and an evaluation-mode
// forward. The golden weights sit in row 1 of a two-client stack whose row 0 holds pfl's own
// initialization. It allocates about 1.5 GB (31.8 million float64 parameters, their
// gradients and the stack's second row), so -short skips it.
func TestDigit5CNNMatchesPFLlib(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the full-size Digit5CNN in float64 takes about 1.5 GB")
	}
	g := golden.Open(t, "testdata/golden/digit5_pfllib.safetensors")
	zero := 0.0
	f, err := model.Spec{Preset: "digit5cnn", Dropout: &zero}.Builder()
	if err != nil {
		t.Fatal(err)
	}
	gen, _ := cuda.NewGenerator(7, cuda.CPU)
	t.Cleanup(func() { gen.Close() })
	const k = 2
	m, err := f(k, cuda.CPU, cuda.Float64, gen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s := cuda.NewScope()
	t.Cleanup(func() { s.Close() })

	index := digit5Layout(t, g, m)
	s.SetGradEnabled(false)
	st := &stack{t: t, g: g, m: m, s: s, gen: gen, k: k, classes: 10}
	for _, p := range m.Params().List {
		a, _ := g.Values("a/" + p.Name)
		b, _ := g.Values("b/" + p.Name)
		n := 1
		for _, d := range p.Shape {
			n *= int(d)
		}
		v := digit5Pattern(n, index[p.Name], 7919, 104729, 2003, 1001.5, a[0], b[0])
		s.CopyFrom(s.Narrow(p.T, 0, goldenRow, 1), cuda.FromSlice(s, cuda.CPU, v, append([]int64{1}, p.Shape...)...))
		if !p.Buffer {
			st.params = append(st.params, p.T)
			st.trained = append(st.trained, p)
		}
	}
	s.SetGradEnabled(true)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}

	x, y := st.batch("x", "y")
	logits := m.Forward(s, x, &model.Pass{Train: true})
	g.Close("logits", s.Select(logits, 0, goldenRow), "logits", goldenTol)
	perClient, total := st.lossOf(logits, y)
	g.Close("loss", s.Narrow(perClient, 0, goldenRow, 1), "loss", goldenTol)
	grads := s.Grad([]*cuda.Tensor{total}, nil, st.params, cuda.GradOptions{})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.SetGradEnabled(false)
	for i, p := range st.trained {
		gr := s.Reshape(s.Select(grads[i], 0, goldenRow), -1)
		if g.Has("grad/" + p.Name) {
			g.Close("grad "+p.Name, gr, "grad/"+p.Name, goldenTol)
			continue
		}
		g.Close("grad head "+p.Name, s.Narrow(gr, 0, 0, 256), "grad_head/"+p.Name, goldenTol)
		u := digit5Pattern(int(gr.Size(0)), index[p.Name], 6007, 31, 1009, 504.5, 1, 0)
		dot := s.Sum(s.Mul(gr, cuda.FromSlice(s, cuda.CPU, u, gr.Size(0))), false)
		g.Close("grad · u "+p.Name, s.Reshape(dot, 1), "grad_dot/"+p.Name, goldenTol)
	}
	stats := 0
	for _, p := range m.Params().List {
		if p.Buffer {
			g.Close("after the pass "+p.Name, s.Select(p.T, 0, goldenRow), "stats/"+p.Name, goldenTol)
			stats++
		}
	}
	if stats != 10 { // five BatchNorms, a mean and a variance each
		t.Fatalf("%d running statistics compared, want 10", stats)
	}
	g.Close("eval logits", s.Select(m.Forward(s, x, &model.Pass{}), 0, goldenRow), "eval_logits", goldenTol)
}

// digit5Layout checks pfl's parameters against the golden file's list of PFLlib's
// state_dict (name, shape, buffer or not, in order, num_batches_tracked left out) and its
// parameter count, and returns each name's position in that list.
func digit5Layout(t *testing.T, g *golden.File, m model.Model) map[string]int {
	t.Helper()
	want := strings.Split(g.Metadata("names"), ";")
	var have []string
	var count int64
	for _, p := range m.Params().List {
		dims := make([]string, len(p.Shape))
		n := int64(1)
		for i, d := range p.Shape {
			dims[i] = strconv.FormatInt(d, 10)
			n *= d
		}
		mark := ""
		if p.Buffer {
			mark = "*"
		} else {
			count += n
		}
		have = append(have, fmt.Sprintf("%s:%s%s", p.Name, strings.Join(dims, "x"), mark))
	}
	if strings.Join(have, ";") != strings.Join(want, ";") {
		t.Fatalf("digit5cnn's parameters\n%s\nPFLlib's Digit5CNN state_dict\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
	if n := metaInt(t, g, "params"); count != n {
		t.Fatalf("digit5cnn has %d parameters, PFLlib's Digit5CNN %d", count, n)
	}
	index := make(map[string]int, len(want))
	for i, e := range want {
		index[strings.SplitN(e, ":", 2)[0]] = i
	}
	return index
}
