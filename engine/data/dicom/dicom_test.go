package dicom

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writer writes DICOM data elements in one encoding, for the tests: pfl ships no DICOM
// files, so the tests make their own, byte by byte as PS3.5 lays them out.
type writer struct {
	buf      bytes.Buffer
	implicit bool
}

func (w *writer) u16(v uint16) { _ = binary.Write(&w.buf, binary.LittleEndian, v) }
func (w *writer) u32(v uint32) { _ = binary.Write(&w.buf, binary.LittleEndian, v) }

// head writes an element header: tag, VR when explicit, length (undefinedLength for an
// undefined one).
func (w *writer) head(tag uint32, vr string, n uint32) {
	w.u16(uint16(tag >> 16))
	w.u16(uint16(tag))
	if w.implicit || tag>>16 == itemGroup {
		w.u32(n)
		return
	}
	w.buf.WriteString(vr)
	if longVRs[vr] {
		w.u16(0)
		w.u32(n)
		return
	}
	w.u16(uint16(n))
}

// el writes an element of defined length.
func (w *writer) el(tag uint32, vr string, v []byte) *writer {
	w.head(tag, vr, uint32(len(v)))
	w.buf.Write(v)
	return w
}

func (w *writer) us(tag uint32, v uint16) *writer {
	return w.el(tag, "US", binary.LittleEndian.AppendUint16(nil, v))
}

// str writes a text element padded to an even length (with a NUL for a UI, a space
// otherwise, as PS3.5 6.2 says).
func (w *writer) str(tag uint32, vr, s string) *writer {
	if len(s)%2 == 1 {
		if vr == "UI" {
			s += "\x00"
		} else {
			s += " "
		}
	}
	return w.el(tag, vr, []byte(s))
}

func (w *writer) bytes() []byte { return slices.Clone(w.buf.Bytes()) }

// part10 wraps a dataset in a Part 10 file: preamble, "DICM", and the file meta group
// in explicit VR little endian.
func part10(syntax string, dataset []byte) []byte {
	m := &writer{}
	m.str(0x0002_0002, "UI", "1.2.840.10008.5.1.4.1.1.7") // secondary capture
	m.str(0x0002_0003, "UI", "1.2.3.4")
	m.str(tagTransferSyntax, "UI", syntax)
	meta := m.bytes()
	f := &writer{}
	f.buf.Write(make([]byte, preambleLength))
	f.buf.WriteString("DICM")
	f.el(0x0002_0000, "UL", binary.LittleEndian.AppendUint32(nil, uint32(len(meta)+14)))
	f.el(0x0002_0001, "OB", []byte{0, 1})
	f.buf.Write(meta)
	f.buf.Write(dataset)
	return f.bytes()
}

// pixelHeader writes the image pixel attributes before the pixel data.
func (w *writer) pixelHeader(rows, cols, bits uint16, photometric string) *writer {
	w.us(tagSamplesPerPixel, 1).str(tagPhotometric, "CS", photometric)
	w.us(tagRows, rows).us(tagColumns, cols)
	return w.us(tagBitsAllocated, bits).us(tagBitsStored, bits).us(tagHighBit, bits-1).us(tagPixelRepresent, 0)
}

// grey8 writes an explicit or implicit VR file of 8-bit pixels.
func grey8(t testing.TB, implicit bool, rows, cols int, photometric string, pix []uint8) []byte {
	w := &writer{implicit: implicit}
	w.str(0x0008_0016, "UI", "1.2.840.10008.5.1.4.1.1.7")
	w.pixelHeader(uint16(rows), uint16(cols), 8, photometric)
	w.el(tagPixelData, "OB", pix)
	syntax := ExplicitVRLittleEndian
	if implicit {
		syntax = ImplicitVRLittleEndian
	}
	return part10(syntax, w.bytes())
}

// jpegFile writes a JPEG-baseline file of img in two fragments after an empty basic
// offset table; it returns the file and the JPEG's own decoded pixels.
func jpegFile(t testing.TB, img *image.Gray, photometric string) ([]byte, []uint8) {
	var j bytes.Buffer
	if err := jpeg.Encode(&j, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	dec, err := jpeg.Decode(bytes.NewReader(j.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	g := dec.(*image.Gray)
	var want []uint8
	for y := range g.Rect.Dy() {
		want = append(want, g.Pix[y*g.Stride:y*g.Stride+g.Rect.Dx()]...)
	}
	b := j.Bytes()
	if len(b)%2 == 1 {
		b = append(b, 0) // fragments have even lengths; JPEG decoders ignore a trailing pad
	}
	half := len(b) / 2 &^ 1
	w := &writer{}
	w.pixelHeader(uint16(img.Rect.Dy()), uint16(img.Rect.Dx()), 8, photometric)
	w.head(tagPixelData, "OB", undefinedLength)
	w.el(tagItem, "", nil) // an empty basic offset table
	w.el(tagItem, "", b[:half])
	w.el(tagItem, "", b[half:])
	w.head(tagSequenceDelimiter, "", 0)
	return part10(JPEGBaseline, w.bytes()), want
}

// minMax is the min–max stretch of v onto 0..255, rounded, computed here on its own.
func minMax(v []float64) []uint8 {
	lo, hi := slices.Min(v), slices.Max(v)
	out := make([]uint8, len(v))
	for i, x := range v {
		out[i] = uint8(math.Round((x - lo) / (hi - lo) * 255))
	}
	return out
}

func ramp(n int, f func(i int) float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

func mustDecode(t *testing.T, b []byte) *Image {
	t.Helper()
	img, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Pixels) != img.Rows*img.Columns {
		t.Fatalf("%d pixels for %d×%d", len(img.Pixels), img.Rows, img.Columns)
	}
	return img
}

func TestExplicitAndImplicit8Bit(t *testing.T) {
	pix := []uint8{10, 20, 30, 40, 50, 60}
	for _, implicit := range []bool{false, true} {
		img := mustDecode(t, grey8(t, implicit, 2, 3, "MONOCHROME2", pix))
		if img.Rows != 2 || img.Columns != 3 || img.Windowed || img.BitsAllocated != 8 {
			t.Fatalf("implicit %v: %+v", implicit, img)
		}
		// min–max: 10 → 0, 60 → 255, 20 → 51
		if want := []uint8{0, 51, 102, 153, 204, 255}; !slices.Equal(img.Pixels, want) {
			t.Fatalf("implicit %v: pixels %v, want %v", implicit, img.Pixels, want)
		}
	}
}

func TestMonochrome1Inverts(t *testing.T) {
	pix := []uint8{10, 20, 30, 40, 50, 60}
	img := mustDecode(t, grey8(t, false, 2, 3, "MONOCHROME1", pix))
	if want := []uint8{255, 204, 153, 102, 51, 0}; !slices.Equal(img.Pixels, want) {
		t.Fatalf("pixels %v, want %v", img.Pixels, want)
	}
}

// TestWindow16Bit checks PS3.3's linear window on unsigned 16-bit samples, implicit VR:
// center 1000, width 201 maps [899.5, 1099.5] onto [0, 255], below 0, above 255.
func TestWindow16Bit(t *testing.T) {
	vals := []uint16{0, 899, 900, 950, 1000, 1099, 1100, 4000}
	var pix []byte
	for _, v := range vals {
		pix = binary.LittleEndian.AppendUint16(pix, v)
	}
	w := &writer{implicit: true}
	w.pixelHeader(2, 4, 16, "MONOCHROME2")
	w.str(tagWindowCenter, "DS", `1000\40`).str(tagWindowWidth, "DS", `201\80`) // the first window counts
	w.el(tagPixelData, "OW", pix)
	img := mustDecode(t, part10(ImplicitVRLittleEndian, w.bytes()))
	if !img.Windowed {
		t.Fatal("window ignored")
	}
	want := make([]uint8, len(vals))
	for i, v := range vals {
		x := float64(v)
		switch {
		case x <= 999.5-100:
			want[i] = 0
		case x > 999.5+100:
			want[i] = 255
		default:
			want[i] = uint8(math.Round(((x-999.5)/200 + 0.5) * 255))
		}
	}
	if !slices.Equal(img.Pixels, want) {
		t.Fatalf("pixels %v, want %v", img.Pixels, want)
	}
	if want[2] != 1 || want[4] != 128 || want[5] != 254 {
		t.Fatalf("hand values: %v", want) // (900−999.5)/200+0.5 = 0.0025 → 1; 1000 → 128.14; 1099 → 254
	}
}

// TestSigned12BitRescale checks 12 stored bits of 16, two's complement, with garbage in
// the top 4 bits, and the modality rescale before the min–max stretch.
func TestSigned12BitRescale(t *testing.T) {
	stored := []int{-2048, -1, 0, 1, 100, 2047}
	var pix []byte
	for i, v := range stored {
		w := uint16(v) & 0x0FFF
		w |= uint16(i%16) << 12 // overlay bits, to be masked off
		pix = binary.LittleEndian.AppendUint16(pix, w)
	}
	w := &writer{}
	w.us(tagSamplesPerPixel, 1).str(tagPhotometric, "CS", "MONOCHROME2").us(tagRows, 3).us(tagColumns, 2)
	w.us(tagBitsAllocated, 16).us(tagBitsStored, 12).us(tagHighBit, 11).us(tagPixelRepresent, 1)
	w.str(tagRescaleIntercept, "DS", "-1024").str(tagRescaleSlope, "DS", "0.5")
	w.el(tagPixelData, "OW", pix)
	img := mustDecode(t, part10(ExplicitVRLittleEndian, w.bytes()))
	want := minMax(ramp(len(stored), func(i int) float64 { return float64(stored[i])*0.5 - 1024 }))
	if !slices.Equal(img.Pixels, want) {
		t.Fatalf("pixels %v, want %v", img.Pixels, want)
	}
	// with a window on the rescaled values: center −1024 (stored 0), width 2
	w2 := &writer{}
	w2.us(tagSamplesPerPixel, 1).str(tagPhotometric, "CS", "MONOCHROME2").us(tagRows, 3).us(tagColumns, 2)
	w2.us(tagBitsAllocated, 16).us(tagBitsStored, 12).us(tagHighBit, 11).us(tagPixelRepresent, 1)
	w2.str(tagWindowCenter, "DS", "-1024").str(tagWindowWidth, "DS", "2")
	w2.str(tagRescaleIntercept, "DS", "-1024").str(tagRescaleSlope, "DS", "0.5")
	w2.el(tagPixelData, "OW", pix)
	img = mustDecode(t, part10(ExplicitVRLittleEndian, w2.bytes()))
	// rescaled −2048, −1024.5, −1024, −1023.5, −974, −0.5: the window's ramp runs over
	// (−1025, −1024], ((x + 1024.5)/1 + 0.5)·255, so −1024.5 → 127.5 → 128, −1024 → 255
	if want := []uint8{0, 128, 255, 255, 255, 255}; !slices.Equal(img.Pixels, want) {
		t.Fatalf("windowed pixels %v, want %v", img.Pixels, want)
	}
}

func TestJPEGBaseline(t *testing.T) {
	src := image.NewGray(image.Rect(0, 0, 24, 16))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 7 % 251)
	}
	for _, ph := range []string{"MONOCHROME2", "MONOCHROME1"} {
		b, dec := jpegFile(t, src, ph)
		img := mustDecode(t, b)
		want := minMax(ramp(len(dec), func(i int) float64 { return float64(dec[i]) }))
		if ph == "MONOCHROME1" {
			for i := range want {
				want[i] = 255 - want[i]
			}
		}
		if img.Rows != 16 || img.Columns != 24 || !slices.Equal(img.Pixels, want) {
			t.Fatalf("%s: %d×%d, pixels differ from the JPEG's own decoding", ph, img.Rows, img.Columns)
		}
	}
}

// iconSequence writes an Icon Image Sequence (0088,0200) of undefined length whose item,
// also of undefined length, holds its own Rows, Columns and Pixel Data and a nested
// sequence of undefined length: none of them is the image's.
func (w *writer) iconSequence() *writer {
	w.head(0x0088_0200, "SQ", undefinedLength)
	w.head(tagItem, "", undefinedLength)
	w.us(tagRows, 999).us(tagColumns, 999)
	w.head(0x0040_A730, "SQ", undefinedLength) // nested: content sequence
	w.el(tagItem, "", (&writer{implicit: w.implicit}).str(0x0040_A040, "CS", "TEXT").bytes())
	w.head(tagSequenceDelimiter, "", 0)
	w.el(tagPixelData, "OB", []byte{1, 2, 3, 4})
	w.head(tagItemDelimiter, "", 0)
	w.head(tagSequenceDelimiter, "", 0)
	return w
}

func TestSequencesAreSkipped(t *testing.T) {
	pix := []uint8{0, 255, 128, 64}
	for _, implicit := range []bool{false, true} {
		w := &writer{implicit: implicit}
		w.str(0x0008_0016, "UI", "1.2.840.10008.5.1.4.1.1.7")
		// a sequence of defined length holding an item with a Rows of its own
		item := (&writer{implicit: implicit}).us(tagRows, 7).bytes()
		seq := (&writer{implicit: implicit}).el(tagItem, "", item).bytes()
		w.el(0x0008_1140, "SQ", seq)
		w.iconSequence()
		w.pixelHeader(2, 2, 8, "MONOCHROME2")
		if !implicit { // an explicit UN of undefined length holds implicit VR items
			w.head(0x0009_1010, "UN", undefinedLength)
			w.head(tagItem, "", undefinedLength)
			inner := &writer{implicit: true}
			inner.str(0x0009_0010, "LO", "PRIVATE")
			w.buf.Write(inner.bytes())
			w.head(tagItemDelimiter, "", 0)
			w.head(tagSequenceDelimiter, "", 0)
		}
		w.el(tagPixelData, "OB", pix)
		w.el(0xFFFC_FFFC, "OB", make([]byte, 8)) // trailing padding after the pixel data
		syntax := map[bool]string{false: ExplicitVRLittleEndian, true: ImplicitVRLittleEndian}[implicit]
		img := mustDecode(t, part10(syntax, w.bytes()))
		if img.Rows != 2 || img.Columns != 2 || !slices.Equal(img.Pixels, pix) {
			t.Fatalf("implicit %v: %d×%d %v", implicit, img.Rows, img.Columns, img.Pixels)
		}
	}
}

// TestErrors checks that unsupported and corrupt files are errors saying what is wrong.
func TestErrors(t *testing.T) {
	ok := grey8(t, false, 2, 2, "MONOCHROME2", []uint8{1, 2, 3, 4})
	header := func(edit func(w *writer)) []byte {
		w := &writer{}
		edit(w)
		return part10(ExplicitVRLittleEndian, w.bytes())
	}
	nested := &writer{}
	for range maxDepth + 2 {
		nested.head(0x0008_1140, "SQ", undefinedLength)
		nested.head(tagItem, "", undefinedLength)
	}
	src := image.NewGray(image.Rect(0, 0, 8, 8))
	jpg, _ := jpegFile(t, src, "MONOCHROME2")
	rgb := image.NewRGBA(image.Rect(0, 0, 8, 8))
	var rgbJPEG bytes.Buffer
	if err := jpeg.Encode(&rgbJPEG, rgb, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"no preamble", ok[128:], "not a DICOM Part 10 file"},
		{"big endian", part10("1.2.840.10008.1.2.2", nil), `"1.2.840.10008.1.2.2" (explicit VR big endian)`},
		{"jpeg lossless", part10("1.2.840.10008.1.2.4.70", nil), "JPEG lossless"},
		{"unknown syntax", part10("1.2.3", nil), `unsupported transfer syntax "1.2.3"`},
		{"no syntax", func() []byte { f := part10("", nil); return f }(), "no Transfer Syntax UID"},
		{"rgb", header(func(w *writer) {
			w.us(tagSamplesPerPixel, 3).str(tagPhotometric, "CS", "RGB").us(tagRows, 1).us(tagColumns, 1).us(tagBitsAllocated, 8)
			w.el(tagPixelData, "OB", []byte{1, 2, 3, 0})
		}), "Samples per Pixel 3"},
		{"palette", header(func(w *writer) {
			w.str(tagPhotometric, "CS", "PALETTE COLOR").us(tagRows, 1).us(tagColumns, 2).us(tagBitsAllocated, 8)
			w.el(tagPixelData, "OB", []byte{1, 2})
		}), `Photometric Interpretation "PALETTE COLOR"`},
		{"multi-frame", header(func(w *writer) {
			w.str(tagPhotometric, "CS", "MONOCHROME2").str(tagFrames, "IS", "2").us(tagRows, 1).us(tagColumns, 2).us(tagBitsAllocated, 8)
			w.el(tagPixelData, "OB", []byte{1, 2, 3, 4})
		}), `Number of Frames "2"`},
		{"32 bits", header(func(w *writer) {
			w.str(tagPhotometric, "CS", "MONOCHROME2").us(tagRows, 1).us(tagColumns, 1).us(tagBitsAllocated, 32)
			w.el(tagPixelData, "OB", []byte{1, 2, 3, 4})
		}), "Bits Allocated 32"},
		{"high bit", header(func(w *writer) {
			w.str(tagPhotometric, "CS", "MONOCHROME2").us(tagRows, 1).us(tagColumns, 2).us(tagBitsAllocated, 16).us(tagBitsStored, 12).us(tagHighBit, 15)
			w.el(tagPixelData, "OW", []byte{1, 2, 3, 4})
		}), "High Bit 15"},
		{"no rows", header(func(w *writer) {
			w.str(tagPhotometric, "CS", "MONOCHROME2").us(tagColumns, 2).us(tagBitsAllocated, 8)
			w.el(tagPixelData, "OB", []byte{1, 2})
		}), "no Rows (0028,0010)"},
		{"short pixel data", header(func(w *writer) {
			w.str(tagPhotometric, "CS", "MONOCHROME2").us(tagRows, 2).us(tagColumns, 2).us(tagBitsAllocated, 16)
			w.el(tagPixelData, "OW", []byte{1, 2, 3, 4})
		}), "Pixel Data holds 4 bytes"},
		{"huge image", header(func(w *writer) {
			w.str(tagPhotometric, "CS", "MONOCHROME2").us(tagRows, 65535).us(tagColumns, 65535).us(tagBitsAllocated, 8)
			w.el(tagPixelData, "OB", []byte{1, 2})
		}), "over the 67108864 pixels"},
		{"bad window", header(func(w *writer) {
			w.str(tagPhotometric, "CS", "MONOCHROME2").us(tagRows, 1).us(tagColumns, 2).us(tagBitsAllocated, 8)
			w.str(tagWindowCenter, "DS", "1e999").str(tagWindowWidth, "DS", "10")
			w.el(tagPixelData, "OB", []byte{1, 2})
		}), "Window Center (0028,1050) is \"1e999\""},
		{"no pixel data", header(func(w *writer) { w.pixelHeader(1, 1, 8, "MONOCHROME2") }), "no Pixel Data"},
		{"huge length", header(func(w *writer) {
			w.pixelHeader(1, 1, 8, "MONOCHROME2")
			w.head(0x0009_0010, "UT", 0xFFFF_FFF0)
		}), "declares 4294967280 bytes"},
		{"deep nesting", part10(ExplicitVRLittleEndian, nested.bytes()), "nested over 64 deep"},
		{"stray vr", header(func(w *writer) {
			w.pixelHeader(1, 1, 8, "MONOCHROME2")
			w.u32(0x0010_0010)
			w.buf.WriteString("\x01\x02\x00\x00")
		}), "no valid VR"},
		{"undefined length string", header(func(w *writer) {
			w.pixelHeader(1, 1, 8, "MONOCHROME2")
			w.head(0x0010_0010, "UT", undefinedLength)
		}), "VR UT and an undefined length"},
		{"unterminated sequence", header(func(w *writer) {
			w.pixelHeader(1, 1, 8, "MONOCHROME2")
			w.head(0x0008_1140, "SQ", undefinedLength)
			w.el(tagItem, "", nil)
		}), "sequence (0008,1140)"},
		{"jpeg header mismatch", func() []byte {
			b, _ := jpegFile(t, image.NewGray(image.Rect(0, 0, 8, 4)), "MONOCHROME2")
			// the header's Rows (4) patched to 5
			i := bytes.Index(b, []byte{0x28, 0, 0x10, 0, 'U', 'S', 2, 0, 4, 0})
			b[i+8] = 5
			return b
		}(), "JPEG frame is 8×4 pixels, the header says 8 Columns × 5 Rows"},
		{"jpeg colour", func() []byte {
			w := &writer{}
			w.pixelHeader(8, 8, 8, "MONOCHROME2")
			w.head(tagPixelData, "OB", undefinedLength)
			w.el(tagItem, "", nil)
			w.el(tagItem, "", append(rgbJPEG.Bytes(), make([]byte, rgbJPEG.Len()%2)...))
			w.head(tagSequenceDelimiter, "", 0)
			return part10(JPEGBaseline, w.bytes())
		}(), "not greyscale"},
		{"jpeg multi-frame", func() []byte {
			w := &writer{}
			w.pixelHeader(8, 8, 8, "MONOCHROME2")
			w.head(tagPixelData, "OB", undefinedLength)
			w.el(tagItem, "", make([]byte, 8))
			w.head(tagSequenceDelimiter, "", 0)
			return part10(JPEGBaseline, w.bytes())
		}(), "offset table of 8 bytes (2 frames)"},
		{"jpeg without delimiter", jpg[:len(jpg)-8], "no sequence delimiter"},
		{"jpeg corrupt", func() []byte {
			b := slices.Clone(jpg)
			i := bytes.Index(b, []byte{0xFF, 0xD8}) // the JPEG's start
			b[i+1] = 0                              // no SOI marker
			return b
		}(), "JPEG baseline frame"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.file)
			if err == nil {
				t.Fatal("decoded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}

// TestTruncated checks that every prefix of valid files is an error, never a panic or
// an image.
func TestTruncated(t *testing.T) {
	src := image.NewGray(image.Rect(0, 0, 8, 8))
	jpg, _ := jpegFile(t, src, "MONOCHROME2")
	seq := &writer{}
	seq.iconSequence().pixelHeader(2, 2, 8, "MONOCHROME2").el(tagPixelData, "OB", []byte{1, 2, 3, 4})
	for _, f := range [][]byte{grey8(t, false, 2, 2, "MONOCHROME2", []uint8{1, 2, 3, 4}), grey8(t, true, 2, 2, "MONOCHROME2", []uint8{1, 2, 3, 4}),
		jpg, part10(ExplicitVRLittleEndian, seq.bytes())} {
		mustDecode(t, f)
		for n := range len(f) {
			if _, err := Decode(f[:n]); err == nil {
				t.Fatalf("a %d-byte prefix of a %d-byte file decoded", n, len(f))
			}
		}
	}
}

func TestReadFileNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.dcm")
	bad := filepath.Join(dir, "bad.dcm")
	if err := os.WriteFile(good, grey8(t, false, 1, 2, "MONOCHROME2", []uint8{0, 9}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, part10("1.2.840.10008.1.2.4.90", nil), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := ReadFile(good)
	if err != nil || !slices.Equal(img.Pixels, []uint8{0, 255}) {
		t.Fatalf("%v %v", img, err)
	}
	_, err = ReadFile(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "JPEG 2000 lossless") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzDICOM decodes arbitrary bytes: an error or a consistent image, never a panic or
// a hang.
func FuzzDICOM(f *testing.F) {
	src := image.NewGray(image.Rect(0, 0, 8, 8))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 3)
	}
	jpg, _ := jpegFile(f, src, "MONOCHROME1")
	seq := &writer{implicit: true}
	seq.iconSequence().pixelHeader(2, 2, 8, "MONOCHROME2").el(tagPixelData, "OB", []byte{1, 2, 3, 4})
	w16 := &writer{}
	w16.pixelHeader(2, 2, 16, "MONOCHROME2").str(tagWindowCenter, "DS", "40").str(tagWindowWidth, "DS", "400")
	w16.str(tagRescaleSlope, "DS", "1").str(tagRescaleIntercept, "DS", "-1024").el(tagPixelData, "OW", make([]byte, 8))
	f.Add(grey8(f, false, 2, 3, "MONOCHROME2", []uint8{1, 2, 3, 4, 5, 6}))
	f.Add(grey8(f, true, 2, 2, "MONOCHROME1", []uint8{1, 2, 3, 4}))
	f.Add(jpg)
	f.Add(part10(ImplicitVRLittleEndian, seq.bytes()))
	f.Add(part10(ExplicitVRLittleEndian, w16.bytes()))
	f.Fuzz(func(t *testing.T, b []byte) {
		img, err := Decode(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dicom: ") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		if img.Rows < 1 || img.Columns < 1 || len(img.Pixels) != img.Rows*img.Columns {
			t.Fatalf("%d×%d image of %d pixels", img.Rows, img.Columns, len(img.Pixels))
		}
	})
}
