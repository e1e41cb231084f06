package analysis

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"

	"pfl/engine/internal/atomicfile"
)

// Image is an input image as a dataset stores it: C×H×W uint8, row-major, C = 1 (grey)
// or 3 (RGB).
type Image struct {
	C, H, W int
	Pix     []uint8
}

// Validate reports an image whose pixels do not fill its shape.
func (im Image) Validate() error {
	if (im.C != 1 && im.C != 3) || im.H < 1 || im.W < 1 || len(im.Pix) != im.C*im.H*im.W {
		return fmt.Errorf("analysis: image of %d×%d×%d with %d pixels (1 or 3 channels)", im.C, im.H, im.W, len(im.Pix))
	}
	return nil
}

// Resize resamples a grid of h×w values (row-major) to oh×ow bilinearly with half-pixel
// centres (PyTorch's interpolate with align_corners=False, OpenCV's resize): the output
// pixel centre y + ½ maps to (y + ½)·h/oh in the input, clamped at the borders.
func Resize(v []float64, h, w, oh, ow int) []float64 {
	out := make([]float64, oh*ow)
	coord := func(o, in, out int) (int, int, float64) {
		x := (float64(o)+0.5)*float64(in)/float64(out) - 0.5
		x = math.Max(0, math.Min(x, float64(in-1)))
		lo := int(math.Floor(x))
		hi := min(lo+1, in-1)
		return lo, hi, x - float64(lo)
	}
	for y := 0; y < oh; y++ {
		y0, y1, fy := coord(y, h, oh)
		for x := 0; x < ow; x++ {
			x0, x1, fx := coord(x, w, ow)
			top := v[y0*w+x0]*(1-fx) + v[y0*w+x1]*fx
			bot := v[y1*w+x0]*(1-fx) + v[y1*w+x1]*fx
			out[y*ow+x] = top*(1-fy) + bot*fy
		}
	}
	return out
}

// Jet is the jet colour map at v in [0, 1] (blue, cyan, yellow, red), as OpenCV's
// COLORMAP_JET, which vit-explain's figures use.
func Jet(v float64) color.RGBA {
	c := func(x float64) uint8 { return uint8(math.Round(255 * math.Max(0, math.Min(1, x)))) }
	v = math.Max(0, math.Min(1, v))
	return color.RGBA{R: c(1.5 - math.Abs(4*v-3)), G: c(1.5 - math.Abs(4*v-2)), B: c(1.5 - math.Abs(4*v-1)), A: 255}
}

// Scale is the integer magnification that brings an image's longer side to at least side
// pixels (1 when it already has them).
func Scale(im Image, side int) int {
	return max(1, (side+max(im.H, im.W)-1)/max(im.H, im.W))
}

// Picture is im magnified scale times (bilinearly), as an RGB image.
func Picture(im Image, scale int) *image.RGBA {
	oh, ow := im.H*scale, im.W*scale
	out := image.NewRGBA(image.Rect(0, 0, ow, oh))
	chans := make([][]float64, 3)
	for c := 0; c < 3; c++ {
		src := min(c, im.C-1)
		plane := make([]float64, im.H*im.W)
		for i := range plane {
			plane[i] = float64(im.Pix[src*im.H*im.W+i])
		}
		chans[c] = Resize(plane, im.H, im.W, oh, ow)
	}
	for i := 0; i < oh*ow; i++ {
		px := func(c int) uint8 { return uint8(math.Round(math.Max(0, math.Min(255, chans[c][i])))) }
		out.Pix[4*i], out.Pix[4*i+1], out.Pix[4*i+2], out.Pix[4*i+3] = px(0), px(1), px(2), 255
	}
	return out
}

// Overlay blends a heat map over im magnified scale times: heat holds gh×gw values in
// [0, 1] (row-major, the patch grid), upsampled bilinearly to the picture's size and
// coloured with Jet; each pixel is (1 − alpha)·image + alpha·colour.
func Overlay(im Image, heat []float64, gh, gw, scale int, alpha float64) (*image.RGBA, error) {
	if err := im.Validate(); err != nil {
		return nil, err
	}
	if gh < 1 || gw < 1 || len(heat) != gh*gw {
		return nil, fmt.Errorf("analysis: a heat map of %d values for a %d×%d grid", len(heat), gh, gw)
	}
	pic := Picture(im, scale)
	oh, ow := im.H*scale, im.W*scale
	up := Resize(heat, gh, gw, oh, ow)
	for i, v := range up {
		c := Jet(v)
		for j, cv := range []uint8{c.R, c.G, c.B} {
			p := &pic.Pix[4*i+j]
			*p = uint8(math.Round((1-alpha)*float64(*p) + alpha*float64(cv)))
		}
	}
	return pic, nil
}

// Sheet lays images out in a grid, with a label left of each row and above each column
// (empty labels leave their margin blank; a nil image leaves its cell blank), on white;
// each row is as high as its highest image.
// Labels are set in Liberation Sans (TextFace) and wrapped at spaces to their column's
// width (a row label to rowLabelWidth): no label runs into the next or loses a word.
func Sheet(cells [][]image.Image, rowLabels, colLabels []string) *image.RGBA {
	const pad = 6
	face := TextFace()
	lineH := face.Metrics().Height.Ceil()
	cw, rowH, height := 0, make([]int, len(cells)), 0 // a row as high as its highest image
	for i, row := range cells {
		for _, c := range row {
			if c != nil {
				cw, rowH[i] = max(cw, c.Bounds().Dx()), max(rowH[i], c.Bounds().Dy())
			}
		}
		height += rowH[i] + pad
	}
	cols := 0
	for _, row := range cells {
		cols = max(cols, len(row))
	}
	rows := make([][]string, len(rowLabels))
	left := 0
	for i, l := range rowLabels {
		rows[i] = Wrap(face, l, rowLabelWidth)
		for _, line := range rows[i] {
			left = max(left, font.MeasureString(face, line).Ceil()+2*pad)
		}
	}
	heads := make([][]string, min(len(colLabels), cols))
	top := 0
	for j := range heads {
		heads[j] = Wrap(face, colLabels[j], cw)
		if colLabels[j] != "" {
			top = max(top, len(heads[j])*lineH+2*pad)
		}
	}
	out := image.NewRGBA(image.Rect(0, 0, left+cols*(cw+pad)+pad, top+height+pad))
	draw.Draw(out, out.Bounds(), image.White, image.Point{}, draw.Src)
	for j, lines := range heads {
		x0 := left + pad + j*(cw+pad)
		y0 := top - pad - len(lines)*lineH // the lines sit on the images
		for k, line := range lines {
			w := font.MeasureString(face, line).Ceil()
			drawText(out, face, image.Black, line, x0+max(0, (cw-w)/2), y0+k*lineH+face.Metrics().Ascent.Ceil())
		}
	}
	y := top + pad
	for i, row := range cells {
		if i < len(rows) {
			y0 := y + (rowH[i]-len(rows[i])*lineH)/2
			for k, line := range rows[i] {
				drawText(out, face, image.Black, line, pad, y0+k*lineH+face.Metrics().Ascent.Ceil())
			}
		}
		for j, c := range row {
			if c == nil {
				continue
			}
			x := left + pad + j*(cw+pad)
			draw.Draw(out, image.Rect(x, y, x+c.Bounds().Dx(), y+c.Bounds().Dy()), c, c.Bounds().Min, draw.Src)
		}
		y += rowH[i] + pad
	}
	return out
}

// rowLabelWidth is the widest a sheet's row label is set before it wraps, in pixels.
const rowLabelWidth = 170

// TextFace is the face of the text on sheets: Liberation Sans (metric-compatible with
// Arial; its licence, the SIL Open Font License, lets it ship inside the binary) at 14
// pixels, hinted. A face keeps state while it draws: every sheet takes its own.
func TextFace() font.Face {
	f, err := sansFont()
	if err != nil {
		return basicfont.Face7x13 // the embedded font cannot fail to parse; were it to, text stays legible
	}
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 14, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return basicfont.Face7x13
	}
	return face
}

// sansFont is Liberation Sans, parsed once.
var sansFont = sync.OnceValues(func() (*opentype.Font, error) { return opentype.Parse(liberationsansregular.TTF) })

// drawText draws s on dst in src's colour with its baseline's left end at (x, y).
func drawText(dst draw.Image, face font.Face, src image.Image, s string, x, y int) {
	d := font.Drawer{Dst: dst, Src: src, Face: face, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// Wrap breaks s at spaces into lines no wider than width pixels in face; a word wider
// than width on its own is broken between letters. Every letter of s is kept: the lines
// joined with spaces (the broken words without) are s with its runs of spaces made one.
func Wrap(face font.Face, s string, width int) []string {
	var lines []string
	for _, word := range strings.Fields(s) {
		if n := len(lines); n > 0 && font.MeasureString(face, lines[n-1]+" "+word).Ceil() <= width {
			lines[n-1] += " " + word
			continue
		}
		for font.MeasureString(face, word).Ceil() > width && utf8.RuneCountInString(word) > 1 {
			cut := 1 // the longest head of the word that fits, at least one letter
			for i := range word {
				if i > 0 && font.MeasureString(face, word[:i]).Ceil() <= width {
					cut = i
				}
			}
			if cut == 1 {
				_, cut = utf8.DecodeRuneInString(word)
			}
			lines, word = append(lines, word[:cut]), word[cut:]
		}
		lines = append(lines, word)
	}
	return lines
}

// WritePNG writes img to path atomically.
func WritePNG(path string, img image.Image) error {
	return atomicfile.Write(path, func(w io.Writer) error { return png.Encode(w, img) })
}

// Caption is img with text under it in white on a strip of colour bg (a prediction, on one
// colour when right and another when wrong), as wide as img: the text is wrapped to the
// image's width over as many lines as it takes, so that none of it is lost.
func Caption(img image.Image, bg color.Color, text string) *image.RGBA {
	face := TextFace()
	b := img.Bounds()
	lines := Wrap(face, text, b.Dx()-4)
	lineH := face.Metrics().Height.Ceil()
	h := len(lines)*lineH + 6
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()+h))
	draw.Draw(out, image.Rect(0, 0, b.Dx(), b.Dy()), img, b.Min, draw.Src)
	draw.Draw(out, image.Rect(0, b.Dy(), b.Dx(), b.Dy()+h), image.NewUniform(bg), image.Point{}, draw.Src)
	for k, line := range lines {
		w := font.MeasureString(face, line).Ceil()
		drawText(out, face, image.White, line, max(1, (b.Dx()-w)/2), b.Dy()+3+k*lineH+face.Metrics().Ascent.Ceil())
	}
	return out
}

// WithColorBar is sheet with the jet colour scale under it: a bar from 0 (blue) to 1
// (red) with its ends written beside it and label under it, wrapped to the sheet's width,
// so a reader can read a map's values.
func WithColorBar(sheet image.Image, label string) *image.RGBA {
	const pad, barH = 6, 14
	face := TextFace()
	lineH := face.Metrics().Height.Ceil()
	b := sheet.Bounds()
	lines := Wrap(face, label, b.Dx()-2*pad)
	h := barH + len(lines)*lineH + 3*pad
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()+h))
	draw.Draw(out, out.Bounds(), image.White, image.Point{}, draw.Src)
	draw.Draw(out, image.Rect(0, 0, b.Dx(), b.Dy()), sheet, b.Min, draw.Src)
	zero := font.MeasureString(face, "0").Ceil()
	x0 := 2*pad + zero
	x1 := min(b.Dx()-2*pad-zero, x0+300)
	y := b.Dy() + pad
	for x := x0; x < x1; x++ {
		c := Jet(float64(x-x0) / float64(max(x1-x0-1, 1)))
		for yy := y; yy < y+barH; yy++ {
			out.Set(x, yy, c)
		}
	}
	base := y + (barH+face.Metrics().Ascent.Ceil())/2 - 1 // the ends' digits centred on the bar
	drawText(out, face, image.Black, "0", pad, base)
	drawText(out, face, image.Black, "1", x1+pad/2, base)
	for i, l := range lines {
		drawText(out, face, image.Black, l, pad, y+barH+pad+face.Metrics().Ascent.Ceil()+i*lineH)
	}
	return out
}
