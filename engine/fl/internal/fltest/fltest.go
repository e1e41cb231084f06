// Package fltest holds what the tests of engine/fl and of its algorithms
// (engine/fl/algo) share: tiny synthetic federations, tiny models in float64, random
// batches, and checks that read a run only through its exported API (Run.State), so that
// an algorithm's tests see the framework as any algorithm does.
package fltest

import (
	"math"
	"slices"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/hyper"
	"pfl/engine/model"
)

// U is float64's unit roundoff, 2^-53: a correctly rounded operation's relative error.
const U = 0x1p-53

// TinySplit is synthetic 1×16×16 data in 4 classes for fast engine tests.
func TinySplit() *data.Split {
	return &data.Split{Train: data.Synthetic("syn/train", 240, 1, 16, 16, 4, 1), Test: data.Synthetic("syn/test", 80, 1, 16, 16, 4, 2)}
}

// Setup is a partitioned federation with both of its sets uploaded.
type Setup struct {
	Fed         *data.Federated
	Train, Test data.Samples
}

// NewSetup partitions sp and uploads both sets to the CPU.
func NewSetup(t testing.TB, sp *data.Split, pc data.PartitionConfig) *Setup {
	t.Helper()
	return NewSetupOn(t, sp, pc, cuda.CPU)
}

// NewSetupOn partitions sp and uploads both sets to dev; they are freed when the test
// ends.
func NewSetupOn(t testing.TB, sp *data.Split, pc data.PartitionConfig, dev cuda.Device) *Setup {
	t.Helper()
	fed, err := sp.Partition(pc)
	if err != nil {
		t.Fatal(err)
	}
	mean, std := data.ChannelStats(sp.Train)
	tr, err := data.Upload(fed.Train, dev, mean, std)
	if err != nil {
		t.Fatal(err)
	}
	te, err := data.Upload(fed.Test, dev, mean, std)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close(); te.Close() })
	return &Setup{fed, tr, te}
}

// Convnet builds the ConvNet (BatchNorm when bn) for image×image inputs of ch channels
// and classes outputs, in float32 on the CPU.
func Convnet(image, ch, classes int64, bn bool) fl.Builder {
	return ConvnetAs(image, ch, classes, bn, cuda.Float32)
}

// ConvnetAs is Convnet in dtype dt.
func ConvnetAs(image, ch, classes int64, bn bool, dt cuda.DType) fl.Builder {
	return func(k int, g *cuda.Generator) (model.Model, error) {
		preset := "convnet"
		if bn {
			preset = "convnet-bn"
		}
		return model.Build(model.Spec{Preset: preset, Image: image, Channels: ch, Classes: classes}, k, cuda.CPU, dt, g)
	}
}

// Build64 is the tiny ConvNet for TinySplit in float64 (BatchNorm when bn).
func Build64(bn bool) fl.Builder { return ConvnetAs(16, 1, 4, bn, cuda.Float64) }

// VitSpec is a tiny ViT for the 16×16 grey, 4-class test images: patch 4, the given width,
// depth, head width (2 heads) and MLP; dropout nil keeps the preset's 0.1.
func VitSpec(dim, depth, headDim, mlp int64, dropout *float64) model.Spec {
	return model.Spec{Preset: "tiny-vit", Image: 16, Channels: 1, Classes: 4, Patch: 4, Dim: dim, Depth: depth,
		Heads: 2, HeadDim: headDim, MLP: mlp, Dropout: dropout}
}

// SmallViT is a float64 ViT for 16×16 grey images with dropout, for exactness tests.
func SmallViT(k int, g *cuda.Generator) (model.Model, error) {
	return model.Build(VitSpec(16, 2, 8, 24, nil), k, cuda.CPU, cuda.Float64, g)
}

// QuietViT is SmallViT without dropout, so a loss is a plain function of the weights.
func QuietViT(k int, g *cuda.Generator) (model.Model, error) {
	none := 0.0
	return model.Build(VitSpec(16, 2, 8, 24, &none), k, cuda.CPU, cuda.Float64, g)
}

// TinyFocal is a float64 FocalNet for the 16×16 grey, 4-class test images: one stage of
// two blocks, dim 8, two focal levels, MLP ratio 2.
func TinyFocal(k int, g *cuda.Generator) (model.Model, error) {
	c := model.FocalNetConfig{Image: 16, Channels: 1, Patch: 4, Dims: []int64{8}, Depths: []int64{2}, Levels: 2, Window: 3, MLPRatio: 2, Classes: 4}
	m, err := model.NewFocalNet("tiny-focal", c, k, cuda.CPU, cuda.Float64, g)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// SmallHyper is a hypernetwork small enough for finite differences.
func SmallHyper() hyper.Config { return hyper.Config{Embed: 8, Hidden: 12, Layers: 4} }

// RankOf is a pointer to r (algorithm.hyper.rank).
func RankOf(r int64) *int64 { return &r }

// Strategy makes the registry's algorithm name from o, as a config would.
func Strategy(t testing.TB, name string, o fl.Options) fl.Strategy {
	t.Helper()
	a, err := fl.LookupAlgorithm(name)
	if err != nil {
		t.Fatal(err)
	}
	return a.New(o)
}

// RandomBatch is a float64 batch for k clients of b 16×16 grey images with labels in
// [0, 4); the last client's last real slots are masked out (a partial batch).
func RandomBatch(t testing.TB, s *cuda.Scope, g *cuda.Generator, k, b int64) fl.Batch {
	t.Helper()
	x := s.Randn(g, cuda.Float64, cuda.CPU, k, b, 1, 16, 16)
	y := s.RandInt(g, 0, 4, cuda.CPU, k, b)
	mask := make([]float32, k*b)
	for i := range mask {
		mask[i] = 1
	}
	mask[k*b-1], mask[k*b-2] = 0, 0
	return fl.Batch{X: x, Y: y, Mask: cuda.FromSlice(s, cuda.CPU, mask, k, b)}
}

// Perturb adds N(0, std²) noise to every trainable parameter of m (in place).
func Perturb(t testing.TB, s *cuda.Scope, g *cuda.Generator, m model.Model, std float64) {
	t.Helper()
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	for _, p := range m.Params().Trainable() {
		s.CopyFrom(p.T, s.Add(p.T, s.MulScalar(s.Randn(g, p.T.DType(), cuda.CPU, p.T.Shape()...), std)))
	}
	s.SetGradEnabled(grad)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// Values reads a tensor as float64s.
func Values(t testing.TB, x *cuda.Tensor) []float64 {
	t.Helper()
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// SameWithin requires |got − want| ≤ tol(i) elementwise.
func SameWithin(t testing.TB, what string, got, want []float64, tol func(i int) float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol(i)) {
			t.Fatalf("%s[%d]: %.17g, want %.17g (difference %.3g > %.3g)", what, i, got[i], want[i], d, tol(i))
		}
	}
}

// Wrapped builds a model for k clients with build and wraps it as a run of w would
// (PrepareHooks.Wrap); it is closed when the test ends.
func Wrapped(t testing.TB, w fl.PrepareStage, build fl.Builder, k int, g *cuda.Generator) model.Model {
	t.Helper()
	m, err := build(k, g)
	if err != nil {
		t.Fatal(err)
	}
	j, err := w.PrepareHooks().Wrap(m, fl.Wrapping{Build: build, Gen: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// MeanCELoss is the run's default loss, for steps called directly.
func MeanCELoss(s *cuda.Scope, m model.Model, b fl.Batch, pass *model.Pass) *cuda.Tensor {
	return fl.MeanCrossEntropy(s, m.Forward(s, b.X, pass), b.Y, b.Mask)
}

// Predictions is the number of test predictions behind e's micro accuracy.
func Predictions(e fl.EvalResult) int {
	n := 0
	for _, c := range e.Count {
		n += c
	}
	return n
}

// State is every tensor of r's state (Run.State: "global/<param>", "store/<param>",
// "strategy/<name>") as float64 values, by name, and the names in order.
func State(t testing.TB, r *fl.Run) (names []string, values map[string][]float64) {
	t.Helper()
	ts, err := r.State()
	if err != nil {
		t.Fatal(err)
	}
	values = map[string][]float64{}
	for _, x := range ts {
		v, err := x.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		names, values[x.Name] = append(names, x.Name), v
	}
	return names, values
}

// Close requires a and b to agree within 1e-9 relative, elementwise; against names b.
func Close(t testing.TB, against, what string, a, b []float64) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values, %s %d", what, len(a), against, len(b))
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9+1e-9*math.Abs(b[i]) {
			t.Fatalf("%s[%d]: stacked %.17g, %s %.17g (diff %.3g)", what, i, a[i], against, b[i], a[i]-b[i])
		}
	}
}

// StackedEqualsSequential trains the same run stacked, one client at a time, as groups of
// one client taken by two threads in turn (Workers 2, the CPU's default on two cores) and
// as two groups on two threads (Stack), and requires equal global models, client stores,
// strategy state, round losses and evaluations. strat makes a fresh strategy for each
// run.
func StackedEqualsSequential(t *testing.T, st *Setup, cfg fl.Config, strat func() fl.Strategy, build fl.Builder) {
	t.Helper()
	variants := []struct {
		name string
		set  func(*fl.Config)
	}{
		{"stacked", func(c *fl.Config) {}},
		{"sequential", func(c *fl.Config) { c.Sequential = true }},
		{"two workers, groups of one", func(c *fl.Config) { c.Workers = 2 }},
		{"two workers, one group each", func(c *fl.Config) { c.Workers, c.Stack = 2, (c.PerRound+1)/2 }},
	}
	var runs []*fl.Run
	for _, v := range variants {
		c := cfg
		v.set(&c)
		r, err := fl.New(c, strat(), st.Fed, st.Train, st.Test, build)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Train(); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		runs = append(runs, r)
	}
	a := runs[0]
	names, want := State(t, a)
	for i, b := range runs[1:] {
		against := variants[i+1].name
		bNames, got := State(t, b)
		if !slices.Equal(names, bNames) {
			t.Fatalf("state stacked %v, %s %v", names, against, bNames)
		}
		for _, n := range names {
			Close(t, against, n, want[n], got[n])
		}
		for r := range a.History {
			la, lb := a.History[r].TrainLoss, b.History[r].TrainLoss
			if math.Abs(la-lb) > 1e-6*math.Abs(lb) { // the loss is summed in float32
				t.Fatalf("round %d loss stacked %g, %s %g", r, la, against, lb)
			}
			ea, eb := a.History[r].Eval, b.History[r].Eval
			if (ea == nil) != (eb == nil) || ea != nil && !slices.Equal(ea.Correct, eb.Correct) {
				t.Fatalf("round %d evaluation: stacked %+v, %s %+v", r, ea, against, eb)
			}
		}
	}
}

// Rows is the stored rows of the personal parameter name (Run.State's "store/<name>"),
// one slice per client; nil when name is not stored per client.
func Rows(t testing.TB, r *fl.Run, name string) [][]float64 {
	t.Helper()
	_, state := State(t, r)
	v, ok := state["store/"+name]
	if !ok {
		return nil
	}
	n := r.Clients()
	if len(v)%n != 0 {
		t.Fatalf("store/%s holds %d values for %d clients", name, len(v), n)
	}
	rows := make([][]float64, n)
	for c := range rows {
		rows[c] = v[c*len(v)/n : (c+1)*len(v)/n]
	}
	return rows
}

// Declared is a one-client model that build declares without allocating it: the
// parameters' names, roles and shapes, as a run of it names them; it is closed when the
// test ends.
func Declared(t testing.TB, build fl.Builder) model.Model {
	t.Helper()
	m, err := build(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// GlobalModel is a one-client model from build (wrapped as the run wraps it, when the
// strategy wraps) holding r's global values (Run.State's "global/<param>"); it is closed
// when the test ends.
func GlobalModel(t testing.TB, r *fl.Run, build fl.Builder) model.Model {
	t.Helper()
	g, err := cuda.NewGenerator(0, cuda.CPU) // every value is overwritten below
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	m, err := build(1, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	_, state := State(t, r)
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	for _, p := range m.Params().List {
		v, ok := state["global/"+p.Name]
		if !ok {
			t.Fatalf("the run's state has no global/%s", p.Name)
		}
		s.CopyFrom(p.T, s.To(cuda.FromSlice(s, cuda.CPU, v, p.T.Shape()...), p.T.DType()))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}
