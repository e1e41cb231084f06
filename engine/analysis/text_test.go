package analysis

import (
	"image"
	"image/color"
	"strings"
	"testing"

	"golang.org/x/image/font"
)

// TestWrap: every line fits the width (a word wider than it is broken between letters),
// and no letter is lost.
func TestWrap(t *testing.T) {
	face := TextFace()
	for _, tc := range []struct {
		s     string
		width int
	}{
		{"#906 Pullover", 60},
		{"Ankle boot: wrong", 50},
		{"aquarium_fish: right", 40},
		{"map value (rollout: divided by its maximum; focal modulation: min-max scaled).", 200},
		{"Supercalifragilistic", 30},
		{"", 40},
		{"x", 1},
	} {
		lines := Wrap(face, tc.s, tc.width)
		for _, l := range lines {
			if w := font.MeasureString(face, l).Ceil(); w > tc.width && len([]rune(l)) > 1 {
				t.Errorf("%q at %d px: line %q is %d px wide", tc.s, tc.width, l, w)
			}
		}
		if got, want := strings.ReplaceAll(strings.Join(lines, ""), " ", ""), strings.ReplaceAll(tc.s, " ", ""); got != want {
			t.Errorf("%q at %d px: lines %q keep %q", tc.s, tc.width, lines, got)
		}
	}
}

// TestCaptionKeepsItsText: a caption too long for its image takes more lines rather than
// losing its end ("right" or "wrong").
func TestCaptionKeepsItsText(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	short := Caption(img, color.Black, "Bag: right")
	long := Caption(img, color.Black, "aquarium_fish: wrong")
	if short.Bounds().Dx() != 64 || long.Bounds().Dx() != 64 {
		t.Fatalf("captions of %v and %v wide, want 64", short.Bounds(), long.Bounds())
	}
	if long.Bounds().Dy() <= short.Bounds().Dy() {
		t.Errorf("a caption twice as long is %d px high, the short one %d: a line was dropped", long.Bounds().Dy(), short.Bounds().Dy())
	}
}

// TestSheetHeadersDoNotTouch: column headers wider than their column wrap onto more lines
// (the header strip grows), so that no two headers run into each other.
func TestSheetHeadersDoNotTouch(t *testing.T) {
	cell := image.NewRGBA(image.Rect(0, 0, 56, 56))
	row := []image.Image{cell, cell, cell}
	short := Sheet([][]image.Image{row}, []string{"client 0"}, []string{"#1 Bag", "#2 Bag", "#3 Bag"})
	long := Sheet([][]image.Image{row}, []string{"client 0"}, []string{"#906 Pullover", "#1439 Dress", "#15 T-shirt/top"})
	if long.Bounds().Dx() != short.Bounds().Dx() {
		t.Errorf("long headers widened the sheet from %d to %d px: columns must keep the images' width", short.Bounds().Dx(), long.Bounds().Dx())
	}
	if long.Bounds().Dy() <= short.Bounds().Dy() {
		t.Errorf("long headers did not wrap: sheet %d px high, with short ones %d", long.Bounds().Dy(), short.Bounds().Dy())
	}
	// between two columns (the gap of 6 px) nothing is drawn in the header strip
	top := long.Bounds().Dy() - 56 - 2*6
	left := long.Bounds().Dx() - 3*(56+6) - 6
	for j := 1; j < 3; j++ {
		gap := left + j*(56+6) + 1 // inside the gap between column j-1 and j
		for y := 0; y < top; y++ {
			if c := long.RGBAAt(gap, y); c.R < 250 || c.G < 250 || c.B < 250 {
				t.Fatalf("header text at (%d, %d), in the gap between columns %d and %d", gap, y, j-1, j)
			}
		}
	}
}
