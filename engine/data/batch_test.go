package data

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
)

func TestPlanKeepsExactEpochs(t *testing.T) {
	parts := [][]int{{0, 1, 2, 3, 4}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, {30, 31, 32}}
	ids := []int{3, 7, 9}
	p, err := NewPlan(ids, parts, PlanConfig{Epochs: 2, Batch: 4, Shuffle: true, Seed: 1, Round: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.ClientSteps, []int{4, 6, 2}) || p.Steps != 6 {
		t.Fatalf("steps %v (%d), want [4 6 2] (6)", p.ClientSteps, p.Steps)
	}
	for i, part := range parts {
		perEpoch := (len(part) + 3) / 4
		for e := 0; e < 2; e++ {
			var seen []int
			for step := e * perEpoch; step < (e+1)*perEpoch; step++ {
				real := 0
				for b := 0; b < 4; b++ {
					at := (step*3+i)*4 + b
					if p.Mask[at] == 1 {
						seen = append(seen, int(p.Index[at]))
						real++
					}
				}
				// full batches, except the last of each epoch
				want := min(4, len(part)-(step-e*perEpoch)*4)
				if real != want {
					t.Fatalf("client %d step %d: %d real samples, want %d", i, step, real, want)
				}
			}
			slices.Sort(seen)
			if !slices.Equal(seen, part) {
				t.Fatalf("client %d epoch %d saw %v, want each of %v once", i, e, seen, part)
			}
		}
		for step := p.ClientSteps[i]; step < p.Steps; step++ { // idle afterwards
			for b := 0; b < 4; b++ {
				if p.Mask[(step*3+i)*4+b] != 0 {
					t.Fatalf("client %d trains at step %d after its %d steps", i, step, p.ClientSteps[i])
				}
			}
		}
	}
	// The two epochs are shuffled differently.
	if slices.Equal(p.Index[12*0+4:12*0+8], p.Index[12*3+4:12*3+8]) && slices.Equal(p.Index[12*1+4:12*1+8], p.Index[12*4+4:12*4+8]) {
		t.Error("client 1's epochs have the same order")
	}

	// A client's batches do not depend on the clients stacked beside it.
	alone, _ := NewPlan([]int{7}, parts[1:2], PlanConfig{Epochs: 2, Batch: 4, Shuffle: true, Seed: 1, Round: 5})
	for step := 0; step < alone.Steps; step++ {
		got := p.Index[(step*3+1)*4 : (step*3+1)*4+4]
		if !slices.Equal(got, alone.Index[step*4:step*4+4]) {
			t.Fatalf("step %d: stacked %v, alone %v", step, got, alone.Index[step*4:step*4+4])
		}
	}
	if _, err := NewPlan([]int{1}, [][]int{{}}, PlanConfig{Epochs: 1, Batch: 4}); err == nil {
		t.Error("a client with no samples accepted")
	}
}

// TestPlanDropsLastPartialGroup: with DropLast g, every epoch of a client with m samples
// takes floor(m/(g·B))·g full batches of distinct samples, reshuffled per epoch, as
// DataLoader(drop_last=True) with batch g·B; a client smaller than a group takes none. The
// order of the kept samples is the plan's without DropLast (the same shuffle stream), so
// only the tail is dropped.
func TestPlanDropsLastPartialGroup(t *testing.T) {
	parts := [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {20, 21, 22}, {30, 31, 32, 33, 34, 35, 36, 37}}
	for _, tc := range []struct {
		group     int
		wantSteps []int // per client, two epochs of batch 2
	}{
		{1, []int{10, 2, 8}}, // floor(11/2)=5, floor(3/2)=1, 4 per epoch
		{2, []int{8, 0, 8}},  // groups of 4: 2, 0, 2 groups of 2 batches per epoch
		{3, []int{6, 0, 6}},  // groups of 6: 1, 0, 1 group of 3 batches per epoch
	} {
		c := PlanConfig{Epochs: 2, Batch: 2, Shuffle: true, Seed: 3, Round: 1, DropLast: tc.group}
		p, err := NewPlan([]int{0, 1, 2}, parts, c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.ClientSteps, tc.wantSteps) {
			t.Fatalf("group %d: steps %v, want %v", tc.group, p.ClientSteps, tc.wantSteps)
		}
		c.DropLast = 0
		full, err := NewPlan([]int{0, 1, 2}, parts, c)
		if err != nil {
			t.Fatal(err)
		}
		for i := range parts {
			per, fullPer := tc.wantSteps[i]/2, full.ClientSteps[i]/2
			for e := 0; e < 2; e++ {
				seen := map[int]bool{}
				for s := 0; s < per; s++ {
					for b := 0; b < 2; b++ {
						at := ((e*per+s)*3+i)*2 + b
						if p.Mask[at] != 1 {
							t.Fatalf("group %d client %d epoch %d step %d: slot %d not full", tc.group, i, e, s, b)
						}
						idx := int(p.Index[at])
						if seen[idx] {
							t.Fatalf("group %d client %d epoch %d: sample %d twice", tc.group, i, e, idx)
						}
						seen[idx] = true
						if want := full.Index[((e*fullPer+s)*3+i)*2+b]; int64(idx) != want {
							t.Fatalf("group %d client %d epoch %d step %d: sample %d, the plan without dropping has %d", tc.group, i, e, s, idx, want)
						}
					}
				}
			}
			for s := p.ClientSteps[i]; s < p.Steps; s++ {
				for b := 0; b < 2; b++ {
					if p.Mask[(s*3+i)*2+b] != 0 {
						t.Fatalf("group %d client %d trains at step %d after its %d steps", tc.group, i, s, p.ClientSteps[i])
					}
				}
			}
		}
	}
	if _, err := NewPlan([]int{0}, parts[:1], PlanConfig{Epochs: 1, Batch: 2, DropLast: -1}); err == nil {
		t.Error("a negative drop-last group accepted")
	}
}

// refBatch is the plain-Go reference of one sample: pad with zeros, crop at (dy, dx),
// flip, scale to [0, 1] and normalize.
func refSample(x *Images, i int, pad, dy, dx int, flip bool, mean, std []float64) []float64 {
	out := make([]float64, 0, x.C*x.H*x.W)
	for c := 0; c < x.C; c++ {
		for r := 0; r < x.H; r++ {
			for q := 0; q < x.W; q++ {
				col := q
				if flip {
					col = x.W - 1 - q
				}
				pr, pc := r+dy-pad, col+dx-pad // position in the unpadded image
				v := 0.0
				if pr >= 0 && pr < x.H && pc >= 0 && pc < x.W {
					v = float64(x.Pixels[((i*x.C+c)*x.H+pr)*x.W+pc]) / 255
				}
				out = append(out, (v-mean[c])/std[c])
			}
		}
	}
	return out
}

func TestDeviceBatchMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := &Images{Name: "tiny", N: 20, C: 2, H: 4, W: 5, Classes: 3}
	for i := 0; i < x.N*x.C*x.H*x.W; i++ {
		x.Pixels = append(x.Pixels, uint8(r.IntN(256)))
	}
	for i := 0; i < x.N; i++ {
		x.Labels = append(x.Labels, int64(i%3))
	}
	mean, std := ChannelStats(x)
	d, err := Upload(x, cuda.CPU, mean, std)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	aug := Augment{Pad: 2, Flip: true}
	parts := [][]int{{0, 1, 2, 3, 4, 5, 6}, {10, 11, 12}}
	plan, err := NewPlan([]int{0, 1}, parts, PlanConfig{Epochs: 1, Batch: 4, Shuffle: true, Augment: aug, Seed: 3})
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
	flips := 0
	for step := 0; step < plan.Steps; step++ {
		bt := d.Batch(s, dp, step)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if got := bt.X.Shape(); !slices.Equal(got, []int64{2, 4, 2, 4, 5}) {
			t.Fatalf("batch shape %v", got)
		}
		xs, _ := bt.X.Float64s()
		ys, _ := bt.Y.Int64s()
		per := x.C * x.H * x.W
		for slot := 0; slot < 2*4; slot++ {
			at := step*8 + slot
			i := int(plan.Index[at])
			want := refSample(x, i, 2, int(plan.DY[at]), int(plan.DX[at]), plan.Flip[at], mean, std)
			for j := range want {
				if math.Abs(xs[slot*per+j]-want[j]) > 1e-5 {
					t.Fatalf("step %d slot %d (sample %d, dy %d dx %d flip %v): value %d = %g, want %g",
						step, slot, i, plan.DY[at], plan.DX[at], plan.Flip[at], j, xs[slot*per+j], want[j])
				}
			}
			if ys[slot] != x.Labels[i] {
				t.Fatalf("label %d, want %d", ys[slot], x.Labels[i])
			}
			if plan.Flip[at] {
				flips++
			}
		}
	}
	if flips == 0 {
		t.Fatal("no sample was flipped: the flip path went untested")
	}
}

func TestNoiseIsPerClient(t *testing.T) {
	x := &Images{Name: "flat", N: 64, C: 1, H: 8, W: 8, Classes: 1, Pixels: make([]uint8, 64*64), Labels: make([]int64, 64)}
	d, _ := Upload(x, cuda.CPU, []float64{0}, []float64{1})
	defer d.Close()
	parts := [][]int{seq(0, 32), seq(32, 64)}
	plan, _ := NewPlan([]int{0, 1}, parts, PlanConfig{Epochs: 1, Batch: 32, Seed: 2})
	dp, err := plan.Upload(cuda.CPU, []float64{0, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	s := cuda.NewScope()
	defer s.Close()
	v, _ := d.Batch(s, dp, 0).X.Float64s()
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	half := len(v) / 2
	var sum2 float64
	for i, z := range v {
		if i < half && z != 0 {
			t.Fatalf("client 0 (noise 0) has a nonzero pixel %g", z)
		}
		if i >= half {
			sum2 += z * z
		}
	}
	if sd := math.Sqrt(sum2 / float64(half)); math.Abs(sd-0.5) > 0.03 {
		t.Fatalf("client 1's noise has std %.3f, want 0.5", sd)
	}
}

func seq(a, b int) []int {
	var out []int
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}

func TestChannelStats(t *testing.T) {
	x := &Images{Name: "two", N: 2, C: 2, H: 1, W: 1, Classes: 1, Pixels: []uint8{0, 255, 255, 255}, Labels: []int64{0, 0}}
	mean, std := ChannelStats(x)
	if math.Abs(mean[0]-0.5) > 1e-12 || math.Abs(std[0]-0.5) > 1e-6 || mean[1] != 1 || std[1] > 1e-5 {
		t.Fatalf("mean %v std %v", mean, std)
	}
}

// TestStaticPlanMatchesUploaded: a static plan loaded round after round (plans of
// different lengths, with augmentation and feature noise) and read at its device cursor
// gives the uploaded plans' batches exactly; bad plans are refused by name.
func TestStaticPlanMatchesUploaded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := &Images{Name: "tiny", N: 30, C: 1, H: 4, W: 4, Classes: 3}
	for i := 0; i < x.N*x.H*x.W; i++ {
		x.Pixels = append(x.Pixels, uint8(r.IntN(256)))
	}
	for i := 0; i < x.N; i++ {
		x.Labels = append(x.Labels, int64(i%3))
	}
	d, err := Upload(x, cuda.CPU, []float64{0.5}, []float64{0.25})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	static, err := NewStaticPlan(cuda.CPU, 6, 2, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	defer static.Close()
	noise := []float64{0.1, 0.3}
	s := cuda.NewScope()
	defer s.Close()
	for round, parts := range [][][]int{{seq(0, 9), seq(10, 14)}, {seq(0, 3), seq(10, 30)}} {
		plan, err := NewPlan([]int{0, 1}, parts, PlanConfig{Epochs: 1, Batch: 4, Shuffle: true,
			Augment: Augment{Pad: 1, Flip: true}, Seed: 9, Round: round})
		if err != nil {
			t.Fatal(err)
		}
		up, err := plan.Upload(cuda.CPU, noise)
		if err != nil {
			t.Fatal(err)
		}
		if err := static.Load(plan, noise); err != nil {
			t.Fatal(err)
		}
		for step := 0; step < plan.Steps; step++ {
			want, got := d.Batch(s, up, step), d.Batch(s, static, step)
			static.Advance(s)
			for _, pair := range [][2]*cuda.Tensor{{want.X, got.X}, {want.Y, got.Y}, {want.Mask, got.Mask}} {
				w, _ := pair[0].Float64s()
				g, _ := pair[1].Float64s()
				if !slices.Equal(w, g) {
					t.Fatalf("round %d step %d: the static plan's batch differs from the uploaded plan's", round, step)
				}
			}
		}
		up.Close()
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	}
	long, _ := NewPlan([]int{0, 1}, [][]int{seq(0, 30), seq(0, 4)}, PlanConfig{Epochs: 1, Batch: 4})
	if err := static.Load(long, noise); err == nil || !strings.Contains(err.Error(), "capacity") {
		t.Errorf("8 steps into a capacity of 6: %v", err)
	}
	one, _ := NewPlan([]int{0}, [][]int{seq(0, 4)}, PlanConfig{Epochs: 1, Batch: 4})
	if err := static.Load(one, noise[:1]); err == nil || !strings.Contains(err.Error(), "1 clients") {
		t.Errorf("a plan of 1 client into a static plan of 2: %v", err)
	}
	short, _ := NewPlan([]int{0, 1}, [][]int{seq(0, 4), seq(4, 8)}, PlanConfig{Epochs: 1, Batch: 4})
	if err := static.Load(short, nil); err == nil || !strings.Contains(err.Error(), "noise") {
		t.Errorf("no noise levels for a static plan with noise: %v", err)
	}
}
