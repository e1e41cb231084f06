package data

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
)

// refResize is the textbook bilinear resize with align_corners=False (PyTorch's
// F.interpolate, mode "bilinear"), in float64 over c planes of h×w values: output (i, j)
// samples the input at y = (i+0.5)·h/oh − 0.5 and x = (j+0.5)·w/ow − 0.5, each clamped
// at 0, blending the neighbours ⌊y⌋ and ⌊y⌋+1 (clamped to the edge), and likewise in x.
func refResize(src []float64, c, h, w, oh, ow int) []float64 {
	coord := func(dst, in, out int) (lo, hi int, frac float64) {
		s := max(0, (float64(dst)+0.5)*float64(in)/float64(out)-0.5)
		lo = int(math.Floor(s))
		return lo, min(lo+1, in-1), s - float64(lo)
	}
	out := make([]float64, 0, c*oh*ow)
	for k := 0; k < c; k++ {
		at := func(y, x int) float64 { return src[(k*h+y)*w+x] }
		for i := 0; i < oh; i++ {
			y0, y1, fy := coord(i, h, oh)
			for j := 0; j < ow; j++ {
				x0, x1, fx := coord(j, w, ow)
				top := (1-fx)*at(y0, x0) + fx*at(y0, x1)
				bot := (1-fx)*at(y1, x0) + fx*at(y1, x1)
				out = append(out, (1-fy)*top+fy*bot)
			}
		}
	}
	return out
}

// randomImages is n random c×h×w images with labels i mod 3.
func randomImages(seed uint64, n, c, h, w int) *Images {
	r := rand.New(rand.NewPCG(seed, 7))
	x := &Images{Name: "random", N: n, C: c, H: h, W: w, Classes: 3}
	for range n * c * h * w {
		x.Pixels = append(x.Pixels, uint8(r.IntN(256)))
	}
	for i := range n {
		x.Labels = append(x.Labels, int64(i%3))
	}
	return x
}

// firstBatch uploads x with cfg and returns the device batch of all its images in order
// (one client, one step), with the plan that made it.
func firstBatch(t *testing.T, x *Images, cfg UploadConfig, aug Augment) ([]float64, *Plan) {
	t.Helper()
	d, err := UploadWith(x, cuda.CPU, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	plan, err := NewPlan([]int{0}, [][]int{seq(0, x.N)}, PlanConfig{Epochs: 1, Batch: x.N, Augment: aug, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	dp, err := plan.Upload(cuda.CPU, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	s := cuda.NewScope()
	defer s.Close()
	bt := d.Batch(s, dp, 0)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	ch, h, w := cfg.Shape(x)
	if d.C != ch || d.H != h || d.W != w {
		t.Fatalf("device images report %d×%d×%d, config says %d×%d×%d", d.C, d.H, d.W, ch, h, w)
	}
	if got, want := bt.X.Shape(), []int64{1, int64(x.N), int64(ch), int64(h), int64(w)}; !slices.Equal(got, want) {
		t.Fatalf("batch shape %v, want %v", got, want)
	}
	v, err := bt.X.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v, plan
}

func TestResizeMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n, c, h, w int
		cfg        UploadConfig
		aug        Augment
	}{
		{"up 28→56 grey", 3, 1, 28, 28, UploadConfig{Size: 56, Mean: []float64{0.3}, Std: []float64{0.2}}, Augment{}},
		{"up 32→224", 3, 3, 32, 32, UploadConfig{Size: 224, Mean: []float64{0.5, 0.4, 0.3}, Std: []float64{0.25, 0.2, 0.3}}, Augment{}},
		{"down 32→20", 4, 3, 32, 32, UploadConfig{Size: 20, Mean: []float64{0.5, 0.5, 0.5}, Std: []float64{0.5, 0.5, 0.5}}, Augment{}},
		{"non-square 24×40→32", 3, 2, 24, 40, UploadConfig{Size: 32, Mean: []float64{0.5, 0.5}, Std: []float64{0.5, 0.5}}, Augment{}},
		{"grey 28→224 as RGB (OrganAMNIST)", 2, 1, 28, 28, UploadConfig{Size: 224, Channels: 3, Mean: []float64{0.5}, Std: []float64{0.5}}, Augment{}},
		{"grey as RGB, per-output-channel stats", 2, 1, 7, 7, UploadConfig{Size: 10, Channels: 3, Mean: []float64{0.1, 0.5, 0.9}, Std: []float64{1, 0.5, 0.25}}, Augment{}},
		{"grey as RGB, no resize", 2, 1, 5, 5, UploadConfig{Channels: 3, Mean: []float64{0.5}, Std: []float64{0.5}}, Augment{}},
		{"crop and flip, then 8×6→12", 6, 2, 8, 6, UploadConfig{Size: 12, Mean: []float64{0.5, 0.5}, Std: []float64{0.5, 0.5}}, Augment{Pad: 2, Flip: true}},
		{"size equal to stored", 2, 3, 9, 9, UploadConfig{Size: 9, Mean: []float64{0.5, 0.5, 0.5}, Std: []float64{0.5, 0.5, 0.5}}, Augment{Pad: 1, Flip: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := randomImages(uint64(tc.n*1000+tc.h), tc.n, tc.c, tc.h, tc.w)
			got, plan := firstBatch(t, x, tc.cfg, tc.aug)
			ch, oh, ow := tc.cfg.Shape(x)
			zero, one := make([]float64, x.C), slices.Repeat([]float64{1}, x.C)
			per := ch * oh * ow
			var worst float64
			for i := range x.N {
				// crop and flip at the stored size on the [0, 1] scale, then resize, repeat, normalize
				px := refSample(x, i, tc.aug.Pad, int(plan.DY[i]), int(plan.DX[i]), plan.Flip[i], zero, one)
				r := refResize(px, x.C, x.H, x.W, oh, ow)
				for j := range per {
					k := j / (oh * ow) // output channel
					v := r[min(k, x.C-1)*oh*ow+j%(oh*ow)]
					m, sd := tc.cfg.Mean[min(k, len(tc.cfg.Mean)-1)], tc.cfg.Std[min(k, len(tc.cfg.Std)-1)]
					want := (v - m) / sd
					d := math.Abs(got[i*per+j] - want)
					worst = max(worst, d)
					if d > 1e-5 {
						t.Fatalf("image %d value %d (channel %d): got %.7f, want %.7f", i, j, k, got[i*per+j], want)
					}
				}
			}
			if tc.aug.Flip && !slices.Contains(plan.Flip[:x.N], true) {
				t.Fatal("no image was flipped: the flip path went untested")
			}
			t.Logf("max abs error vs float64 reference: %.2g", worst)
		})
	}
}

// TestResizeByHand checks 2×2 → 4×4 against values worked out on paper: the rows and
// columns sample the input at 0 (clamped from −0.25), 0.25, 0.75 and 1 (1.25 clamped to
// the edge), so the top row 0, 100 becomes 0, 25, 75, 100.
func TestResizeByHand(t *testing.T) {
	x := &Images{Name: "2×2", N: 1, C: 1, H: 2, W: 2, Classes: 1, Pixels: []uint8{0, 100, 200, 40}, Labels: []int64{0}}
	want := []float64{
		0, 25, 75, 100,
		50, 58.75, 76.25, 85,
		150, 126.25, 78.75, 55,
		200, 160, 80, 40,
	}
	got, _ := firstBatch(t, x, UploadConfig{Size: 4, Mean: []float64{0}, Std: []float64{1}}, Augment{})
	for i := range want {
		if math.Abs(got[i]*255-want[i]) > 1e-4 {
			t.Fatalf("pixel %d: got %g, want %g (all: %v)", i, got[i]*255, want[i], got)
		}
	}
	if ref := refResize([]float64{0, 100, 200, 40}, 1, 2, 2, 4, 4); !slices.Equal(ref, want) {
		t.Fatalf("reference gives %v", ref)
	}
}

func TestUploadConfigErrors(t *testing.T) {
	grey, rgb := randomImages(1, 2, 1, 4, 4), randomImages(2, 2, 3, 4, 4)
	half := func(n int) []float64 { return slices.Repeat([]float64{0.5}, n) }
	for _, tc := range []struct {
		name string
		x    *Images
		cfg  UploadConfig
		err  string
	}{
		{"negative size", rgb, UploadConfig{Size: -1, Mean: half(3), Std: half(3)}, "size -1"},
		{"RGB to 1 channel", rgb, UploadConfig{Channels: 1, Mean: half(3), Std: half(3)}, "1 channels from 3"},
		{"grey to 2 channels", grey, UploadConfig{Channels: 2, Mean: half(1), Std: half(1)}, "2 channels from 1"},
		{"two means for grey as RGB", grey, UploadConfig{Channels: 3, Mean: half(2), Std: half(2)}, "2 means"},
		{"three means for grey", grey, UploadConfig{Mean: half(3), Std: half(3)}, "3 means"},
		{"mean and std differ", rgb, UploadConfig{Mean: half(3), Std: half(1)}, "3 means and 1 stds"},
		{"zero std", rgb, UploadConfig{Mean: half(3), Std: []float64{1, 0, 1}}, "std of channel 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := UploadWith(tc.x, cuda.CPU, tc.cfg)
			if err == nil {
				d.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one containing %q", err, tc.err)
			}
		})
	}
}
