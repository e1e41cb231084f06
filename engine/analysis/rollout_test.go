package analysis

import (
	"image"
	"math"
	"slices"
	"testing"
)

func near(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

// TestRolloutByHand: two blocks of two heads over two tokens, worked out on paper.
//
// Max fusion, 30% discarded (⌊0.3·4⌋ = 1 entry): block 1 fuses to [[.6 .5] [.3 .8]], drops
// .3, (A + I) row-normalized is [[16/21 5/21] [0 1]]; block 2 fuses to [[.9 .3] [.5 .6]],
// drops .3, giving [[1 0] [5/21 16/21]]; the class token's row of their product is
// [16/21 5/21]. Mean fusion, nothing discarded: [[.775 .225] [.125 .875]] and
// [[.9 .1] [.225 .775]], whose product's first row is [.71 .29].
func TestRolloutByHand(t *testing.T) {
	blocks := []Attention{
		{Heads: 2, T: 2, P: []float64{0.5, 0.5, 0.2, 0.8, 0.6, 0.4, 0.3, 0.7}},
		{Heads: 2, T: 2, P: []float64{0.9, 0.1, 0.4, 0.6, 0.7, 0.3, 0.5, 0.5}},
	}
	got, err := Rollout(blocks, RolloutOptions{Fusion: FusionMax, Discard: 0.3})
	if err != nil || !near(got, []float64{16.0 / 21, 5.0 / 21}, 1e-15) {
		t.Fatalf("max, 30%%: %v (%v)", got, err)
	}
	got, err = Rollout(blocks, RolloutOptions{Fusion: FusionMean})
	if err != nil || !near(got, []float64{0.71, 0.29}, 1e-15) {
		t.Fatalf("mean: %v (%v)", got, err)
	}
	// the class token's own entry is never discarded: a matrix whose smallest entry is
	// entry 0 loses nothing else in its place
	one := []Attention{{Heads: 1, T: 2, P: []float64{0.1, 0.9, 0.5, 0.5}}}
	if got, _ = Rollout(one, RolloutOptions{Discard: 0.3}); !near(got, []float64{1.1 / 2, 0.9 / 2}, 1e-15) {
		t.Fatalf("entry 0 discarded: %v", got)
	}
	for _, bad := range []RolloutOptions{{Discard: 1}, {Discard: -0.1}, {Fusion: "min"}} {
		if _, err := Rollout(blocks, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := Rollout([]Attention{blocks[0], {Heads: 1, T: 3, P: make([]float64, 9)}}, RolloutOptions{}); err == nil {
		t.Error("blocks of different token counts accepted")
	}
}

// TestRestrict drops a prompt query and key and a prefix key and renormalizes the rows.
func TestRestrict(t *testing.T) {
	// one head, T = 3 queries (cls, prompt, patch), S = 4 keys (prefix, cls, prompt, patch)
	p := []float64{
		0.1, 0.2, 0.3, 0.4,
		0.25, 0.25, 0.25, 0.25,
		0.4, 0.1, 0.4, 0.1,
	}
	a, err := Restrict(p, 1, 3, 4, []int{0, 2}, []int{1, 3})
	if err != nil || a.T != 2 || !near(a.P, []float64{1.0 / 3, 2.0 / 3, 0.5, 0.5}, 1e-15) {
		t.Fatalf("%+v (%v)", a, err)
	}
}

// TestResizeAndColours: bilinear resizing with half-pixel centres, the jet ends, the
// normalizations and the channel magnitude.
func TestResizeAndColours(t *testing.T) {
	// 1×2 → 1×4: centres at −¼ (clamped to 0), ¼, ¾, 1¼ (clamped to 1)
	if got := Resize([]float64{0, 1}, 1, 2, 1, 4); !near(got, []float64{0, 0.25, 0.75, 1}, 1e-15) {
		t.Fatalf("resize %v", got)
	}
	if got := Resize([]float64{1, 2, 3, 4}, 2, 2, 2, 2); !slices.Equal(got, []float64{1, 2, 3, 4}) {
		t.Fatalf("identity resize %v", got)
	}
	if c := Jet(0); c.R != 0 || c.G != 0 || c.B != 128 {
		t.Errorf("jet(0) = %v", c)
	}
	if c := Jet(1); c.R != 128 || c.G != 0 || c.B != 0 {
		t.Errorf("jet(1) = %v", c)
	}
	if c := Jet(0.5); c.R != 128 || c.G != 255 || c.B != 128 {
		t.Errorf("jet(.5) = %v", c)
	}
	if got := Normalize([]float64{1, 2, 4}, false); !near(got, []float64{0.25, 0.5, 1}, 0) {
		t.Errorf("normalize %v", got)
	}
	if got := Normalize([]float64{1, 2, 3}, true); !near(got, []float64{0, 0.5, 1}, 0) {
		t.Errorf("min-max %v", got)
	}
	if got := Magnitude([]float64{3, 0, 4, 1}, 2, 2); !near(got, []float64{5, 1}, 0) {
		t.Errorf("magnitude %v", got)
	}
}

// TestOverlay: a grey image magnified with a heat map blended at half strength.
func TestOverlay(t *testing.T) {
	im := Image{C: 1, H: 2, W: 2, Pix: []uint8{0, 0, 0, 0}}
	if Scale(im, 8) != 4 || Scale(Image{H: 300, W: 200}, 128) != 1 {
		t.Fatal("scale")
	}
	out, err := Overlay(im, []float64{1}, 1, 1, 4, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if b := out.Bounds(); b.Dx() != 8 || b.Dy() != 8 {
		t.Fatalf("size %v", b)
	}
	if c := out.RGBAAt(3, 5); c.R != 64 || c.G != 0 || c.B != 0 { // half of jet(1) = (128, 0, 0)
		t.Fatalf("pixel %v", c)
	}
	if _, err := Overlay(im, []float64{1, 2}, 1, 1, 1, 0.5); err == nil {
		t.Fatal("a heat map of the wrong size accepted")
	}
	sheet := Sheet([][]image.Image{{out, nil}, {out, out}}, []string{"input", "fedtp"}, []string{"0", "1"})
	if b := sheet.Bounds(); b.Dx() < 16 || b.Dy() < 16 {
		t.Fatalf("sheet %v", b)
	}
}
