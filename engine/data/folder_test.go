package data

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func pngBytes(t testing.TB, img image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// greyImage returns a w×h greyscale image of the given row-major values.
func greyImage(w, h int, v ...uint8) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, w, h))
	copy(g.Pix, v)
	return g
}

// replicate3 returns three copies of p, as a greyscale image in CHW RGB.
func replicate3(p []uint8) []uint8 { return slices.Concat(p, p, p) }

// TestResizePIL checks resizePIL against PIL 9.4's Image.resize(BILINEAR) on the same
// pixels (values printed by PIL; the 2×2 case is also worked out in TestResizeByHand).
func TestResizePIL(t *testing.T) {
	for _, tc := range []struct {
		name            string
		c, h, w, oh, ow int
		src, want       []uint8
	}{
		// Half-pixel centres: output 0..3 sample the input at 0 (clamped), 0.25, 0.75, 1 (clamped).
		{"2×2 to 4×4", 1, 2, 2, 4, 4, []uint8{0, 100, 200, 40}, []uint8{
			0, 25, 75, 100,
			50, 59, 76, 85,
			150, 126, 79, 55,
			200, 160, 80, 40,
		}},
		{"constant", 2, 3, 5, 7, 2, slices.Repeat([]uint8{77}, 30), slices.Repeat([]uint8{77}, 28)},
		{"constant 255", 1, 2, 3, 5, 4, slices.Repeat([]uint8{255}, 6), slices.Repeat([]uint8{255}, 20)},
		{"identity", 1, 2, 3, 2, 3, []uint8{1, 2, 3, 4, 5, 6}, []uint8{1, 2, 3, 4, 5, 6}},
		// Shrinking 2× widens the triangle to ±2 pixels: output 0 is centred at 1 and
		// weighs inputs 0, 1, 2 by 3/7, 3/7, 1/7: (0·3 + 10·3 + 20)/7 = 7.1 (unfiltered: 5).
		{"halve a row", 1, 1, 4, 1, 2, []uint8{0, 10, 20, 30}, []uint8{7, 23}},
		{"one pixel", 1, 1, 1, 2, 3, []uint8{9}, []uint8{9, 9, 9, 9, 9, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resizePIL(tc.src, tc.c, tc.h, tc.w, tc.oh, tc.ow)
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLoadImageFolder(t *testing.T) {
	root := t.TempDir()
	rgb := image.NewRGBA(image.Rect(0, 0, 4, 4))
	var wantRGB [3][]uint8
	for y := range 4 {
		for x := range 4 {
			c := color.RGBA{uint8(10*x + y), uint8(50 + x), uint8(200 - y), 255}
			rgb.SetRGBA(x, y, c)
			wantRGB[0], wantRGB[1], wantRGB[2] = append(wantRGB[0], c.R), append(wantRGB[1], c.G), append(wantRGB[2], c.B)
		}
	}
	grey := greyImage(4, 4, seqBytes(16, 3)...)
	alpha := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	for i := range 16 {
		alpha.Pix[4*i], alpha.Pix[4*i+1], alpha.Pix[4*i+2], alpha.Pix[4*i+3] = 30, 60, 90, 128
	}
	photo := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range 64 {
		copy(photo.Pix[4*i:], []uint8{200, 100, 50, 255})
	}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, photo, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	putFile(t, root, "cat/rgb.png", pngBytes(t, rgb))
	putFile(t, root, "cat/grey.png", pngBytes(t, grey))
	putFile(t, root, "cat/notes.txt", []byte("skipped"))
	putFile(t, root, "cat/.hidden.png", []byte("skipped"))
	putFile(t, root, "dog/alpha.png", pngBytes(t, alpha))
	putFile(t, root, "dog/photo.JPG", jpg.Bytes())
	putFile(t, root, "dog/small.png", pngBytes(t, greyImage(2, 2, 0, 100, 200, 40)))
	x, err := LoadImageFolder("pets", root, 4)
	if err != nil {
		t.Fatal(err)
	}
	if x.Name != "pets" || x.N != 5 || x.C != 3 || x.H != 4 || x.W != 4 || !slices.Equal(x.ClassNames, []string{"cat", "dog"}) ||
		!slices.Equal(x.Labels, []int64{0, 0, 1, 1, 1}) {
		t.Fatalf("%s: %d×%d×%d×%d classes %v labels %v", x.Name, x.N, x.C, x.H, x.W, x.ClassNames, x.Labels)
	}
	img := func(i int) []uint8 { return x.Pixels[i*48 : (i+1)*48] }
	small := []uint8{0, 25, 75, 100, 50, 59, 76, 85, 150, 126, 79, 55, 200, 160, 80, 40}
	for i, want := range [][]uint8{
		replicate3(seqBytes(16, 3)),
		slices.Concat(wantRGB[0], wantRGB[1], wantRGB[2]),
		slices.Concat(slices.Repeat([]uint8{30}, 16), slices.Repeat([]uint8{60}, 16), slices.Repeat([]uint8{90}, 16)),
		nil, // JPEG: approximate
		replicate3(small),
	} {
		if want != nil && !bytes.Equal(img(i), want) {
			t.Errorf("image %d: got %v, want %v", i, img(i), want)
		}
	}
	for k, v := range []int{200, 100, 50} {
		for _, p := range img(3)[16*k : 16*(k+1)] {
			if d := int(p) - v; d < -8 || d > 8 {
				t.Errorf("JPEG channel %d: pixel %d, want about %d", k, p, v)
			}
		}
	}
}

// hugePNG returns a PNG whose header declares w×h pixels but holds a 1×1 image.
func hugePNG(t testing.TB, w, h uint32) []byte {
	b := pngBytes(t, greyImage(1, 1, 0))
	binary.BigEndian.PutUint32(b[16:], w) // IHDR data starts at 16
	binary.BigEndian.PutUint32(b[20:], h)
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}

func TestLoadImageFolderErrors(t *testing.T) {
	good := pngBytes(t, greyImage(2, 2, 1, 2, 3, 4))
	for _, tc := range []struct {
		name, file string
		content    []byte
		err        string
	}{
		{"corrupt png", "a/bad.png", []byte("\x89PNG\r\n\x1a\nnonsense"), "cannot decode"},
		{"truncated png", "a/cut.png", good[:len(good)-20], "cannot decode"},
		{"text as jpeg", "a/bad.jpeg", []byte("hello"), "cannot decode"},
		{"huge png", "a/huge.png", hugePNG(t, 1<<20, 1<<20), "declares 1048576×1048576"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			putFile(t, root, "a/good.png", good)
			p := putFile(t, root, tc.file, tc.content)
			_, err := LoadImageFolder("x", root, 2)
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one naming %s and containing %q", err, p, tc.err)
			}
		})
	}
	if _, err := LoadImageFolder("x", t.TempDir(), 2); err == nil || !strings.Contains(err.Error(), "no class") {
		t.Fatalf("empty root: err = %v", err)
	}
}

func TestLoadDomainFolders(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"Art/cat/1.png", "Art/dog/1.png", "Real World/cat/1.png", "Real World/cat/2.png", "Real World/dog/1.png"} {
		putFile(t, root, f, pngBytes(t, greyImage(2, 2, uint8(len(f)), 0, 0, 0)))
	}
	x, err := LoadDomainFolders("office", root, []string{"Real World", "Art"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if x.N != 5 || !slices.Equal(x.Labels, []int64{0, 0, 1, 0, 1}) || !slices.Equal(x.Domains, []int64{0, 0, 0, 1, 1}) ||
		!slices.Equal(x.DomainNames, []string{"Real World", "Art"}) || !slices.Equal(x.ClassNames, []string{"cat", "dog"}) ||
		x.Pixels[0] != uint8(len("Real World/cat/1.png")) || x.Pixels[3*12] != uint8(len("Art/cat/1.png")) {
		t.Fatalf("%d images, labels %v, domains %v %v", x.N, x.Labels, x.Domains, x.DomainNames)
	}
	putFile(t, root, "Clipart/cat/1.png", pngBytes(t, greyImage(2, 2)))
	putFile(t, root, "Clipart/cow/1.png", pngBytes(t, greyImage(2, 2)))
	_, err = LoadDomainFolders("office", root, []string{"Art", "Clipart"}, 2)
	if err == nil || !strings.Contains(err.Error(), `domain "Clipart"`) {
		t.Fatalf("mismatched classes: err = %v", err)
	}
	if _, err = LoadDomainFolders("office", root, []string{"Art", "Product"}, 2); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "Product")) {
		t.Fatalf("missing domain: err = %v", err)
	}
}
