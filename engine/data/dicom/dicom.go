// Package dicom reads the greyscale image of a single-frame DICOM Part 10 file, the
// format of chest X-ray collections such as the RSNA Pneumonia Detection Challenge, with
// the standard library only.
//
// It reads what such collections use and refuses the rest by name:
//
//   - a Part 10 file: a 128-byte preamble, "DICM", then the file meta group (0002) in
//     explicit VR little endian;
//   - transfer syntaxes explicit VR little endian (1.2.840.10008.1.2.1), implicit VR
//     little endian (1.2.840.10008.1.2) and JPEG baseline (1.2.840.10008.1.2.4.50,
//     encapsulated: a basic offset table then fragments in items, decoded with
//     image/jpeg);
//   - one sample per pixel, photometric interpretation MONOCHROME1 or MONOCHROME2, one
//     frame, 8 or 16 bits allocated, unsigned or two's-complement (Pixel Representation 0
//     or 1) with Bits Stored ≤ Bits Allocated and High Bit = Bits Stored − 1;
//   - sequences of defined or undefined length anywhere before the pixel data, skipped
//     (their elements, an icon image's Rows or Pixel Data for instance, never count as
//     the image's).
//
// Other transfer syntaxes (big endian, deflated, JPEG lossless or extended, JPEG-LS,
// JPEG 2000, RLE), colour images and multi-frame images are errors naming the value.
// Every length read from the file is checked against the bytes left before it is used,
// sequence nesting is bounded, and an image's pixel count is bounded before anything
// that large is allocated: no input panics or hangs.
//
// A JPEG frame is decoded by image/jpeg, whose inverse DCT may differ from libjpeg's
// by a level on some pixels.
//
// Pixel values become uint8 as a viewer displays them (see Image.Pixels): the modality
// rescale (Rescale Slope and Intercept) first, then the VOI window's linear function of
// PS3.3 C.11.2.1.2.1 when the file gives Window Center and Width, else the image's own
// minimum and maximum stretched to 0 and 255; MONOCHROME1 is then inverted, so that a
// higher value is always brighter.
package dicom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"strconv"
	"strings"
)

// The transfer syntaxes Decode reads.
const (
	ExplicitVRLittleEndian = "1.2.840.10008.1.2.1"
	ImplicitVRLittleEndian = "1.2.840.10008.1.2"
	JPEGBaseline           = "1.2.840.10008.1.2.4.50"
)

// MaxPixels bounds Rows × Columns: a header cannot make Decode allocate more than a few
// hundred megabytes (the largest radiographs are about 4,000 × 5,000 pixels).
const MaxPixels = 1 << 26

// maxJPEGPixelsPerByte bounds a JPEG's pixel count by its compressed size, so that a
// few corrupt bytes declaring a huge frame are refused before it is decoded: a baseline
// JPEG spends at least a bit or two on each 8×8 block, far below this.
const maxJPEGPixelsPerByte = 1 << 14

// maxDepth bounds sequence nesting: real files nest a few levels, and the bound keeps
// a file of nested undefined-length items from exhausting the stack.
const maxDepth = 64

// maxFileSize bounds the file ReadFile reads (a single-frame radiograph is a few tens of
// megabytes at most).
const maxFileSize = 1 << 30

// Image is the decoded image of a DICOM file.
type Image struct {
	Rows, Columns int
	// Pixels are Rows·Columns display values, row by row, 0 black and 255 white: after the
	// modality rescale, the window (or min–max stretch) and MONOCHROME1's inversion.
	Pixels []uint8

	TransferSyntax string // the file meta's transfer syntax UID
	Photometric    string // MONOCHROME1 or MONOCHROME2
	BitsAllocated  int    // 8 or 16
	// Windowed says whether the file's Window Center and Width mapped the values to
	// uint8; false means the image's own minimum and maximum did.
	Windowed bool
}

// ReadFile reads and decodes the DICOM file at path; its errors name the file.
func ReadFile(path string) (*Image, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	if fi.Size() > maxFileSize {
		return nil, fmt.Errorf("dicom: %s: %d bytes, over the %d a single-frame image may have", path, fi.Size(), maxFileSize)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	img, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("dicom: %s: %w", path, err)
	}
	return img, nil
}

// Decode decodes the bytes of a DICOM Part 10 file.
func Decode(b []byte) (*Image, error) {
	img, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	return img, nil
}

// Tags (group << 16 | element) Decode reads.
const (
	tagTransferSyntax     = 0x0002_0010
	tagSamplesPerPixel    = 0x0028_0002
	tagPhotometric        = 0x0028_0004
	tagFrames             = 0x0028_0008
	tagRows               = 0x0028_0010
	tagColumns            = 0x0028_0011
	tagBitsAllocated      = 0x0028_0100
	tagBitsStored         = 0x0028_0101
	tagHighBit            = 0x0028_0102
	tagPixelRepresent     = 0x0028_0103
	tagWindowCenter       = 0x0028_1050
	tagWindowWidth        = 0x0028_1051
	tagRescaleIntercept   = 0x0028_1052
	tagRescaleSlope       = 0x0028_1053
	tagPixelData          = 0x7FE0_0010
	tagItem               = 0xFFFE_E000
	tagItemDelimiter      = 0xFFFE_E00D
	tagSequenceDelimiter  = 0xFFFE_E0DD
	undefinedLength       = 0xFFFF_FFFF
	preambleLength        = 128
	metaGroup             = 0x0002
	itemGroup             = 0xFFFE
	encapsulatedItemLimit = 1 << 20 // fragments per image: far more than any encoder writes
)

// names is how errors show the tags Decode reads.
var names = map[uint32]string{
	tagTransferSyntax: "Transfer Syntax UID", tagSamplesPerPixel: "Samples per Pixel",
	tagPhotometric: "Photometric Interpretation", tagFrames: "Number of Frames", tagRows: "Rows",
	tagColumns: "Columns", tagBitsAllocated: "Bits Allocated", tagBitsStored: "Bits Stored",
	tagHighBit: "High Bit", tagPixelRepresent: "Pixel Representation", tagWindowCenter: "Window Center",
	tagWindowWidth: "Window Width", tagRescaleIntercept: "Rescale Intercept", tagRescaleSlope: "Rescale Slope",
	tagPixelData: "Pixel Data",
}

// syntaxNames names the transfer syntaxes Decode refuses, for its messages.
var syntaxNames = map[string]string{
	"1.2.840.10008.1.2.2":    "explicit VR big endian",
	"1.2.840.10008.1.2.1.99": "deflated explicit VR little endian",
	"1.2.840.10008.1.2.4.51": "JPEG extended (12-bit)",
	"1.2.840.10008.1.2.4.57": "JPEG lossless",
	"1.2.840.10008.1.2.4.70": "JPEG lossless, first-order prediction",
	"1.2.840.10008.1.2.4.80": "JPEG-LS lossless",
	"1.2.840.10008.1.2.4.81": "JPEG-LS near-lossless",
	"1.2.840.10008.1.2.4.90": "JPEG 2000 lossless",
	"1.2.840.10008.1.2.4.91": "JPEG 2000",
	"1.2.840.10008.1.2.5":    "RLE lossless",
}

// tagString formats a tag as (gggg,eeee), with its name when Decode reads it.
func tagString(t uint32) string {
	s := fmt.Sprintf("(%04X,%04X)", t>>16, t&0xFFFF)
	if n, ok := names[t]; ok {
		s = n + " " + s
	}
	return s
}

// clip quotes a value read from the file for a message, cut to 64 bytes.
func clip(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q… (%d bytes)", s[:64], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// reader walks a file's bytes; every read checks the bytes left.
type reader struct {
	b   []byte
	pos int
}

var errTruncated = errors.New("truncated")

func (r *reader) left() int { return len(r.b) - r.pos }

func (r *reader) u16() (uint16, error) {
	if r.left() < 2 {
		return 0, errTruncated
	}
	v := binary.LittleEndian.Uint16(r.b[r.pos:])
	r.pos += 2
	return v, nil
}

func (r *reader) u32() (uint32, error) {
	if r.left() < 4 {
		return 0, errTruncated
	}
	v := binary.LittleEndian.Uint32(r.b[r.pos:])
	r.pos += 4
	return v, nil
}

// bytes returns the next n bytes.
func (r *reader) bytes(n uint32) ([]byte, error) {
	if uint64(n) > uint64(r.left()) {
		return nil, errTruncated
	}
	v := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return v, nil
}

// header is one data element's header.
type header struct {
	tag    uint32
	vr     string // "" in implicit VR and for item tags
	length uint32 // undefinedLength for an undefined length
	at     int    // the element's offset in the file, for messages
}

// longVRs have a 2-byte reserved field and a 4-byte length in explicit VR (PS3.5 7.1.2).
var longVRs = map[string]bool{"OB": true, "OD": true, "OF": true, "OL": true, "OV": true, "OW": true,
	"SQ": true, "SV": true, "UC": true, "UN": true, "UR": true, "UT": true, "UV": true}

// header reads an element header: tag, VR when explicit, and length. Item and
// delimiter tags (group FFFE) have no VR in either encoding.
func (r *reader) header(implicit bool) (header, error) {
	h := header{at: r.pos}
	g, err := r.u16()
	if err != nil {
		return h, err
	}
	e, err := r.u16()
	if err != nil {
		return h, err
	}
	h.tag = uint32(g)<<16 | uint32(e)
	if implicit || g == itemGroup {
		h.length, err = r.u32()
		return h, err
	}
	vr, err := r.bytes(2)
	if err != nil {
		return h, err
	}
	if vr[0] < 'A' || vr[0] > 'Z' || vr[1] < 'A' || vr[1] > 'Z' {
		return h, fmt.Errorf("element %s at byte %d has no valid VR (bytes %#x; an implicit VR dataset under an explicit VR transfer syntax?)", tagString(h.tag), h.at, vr)
	}
	h.vr = string(vr)
	if longVRs[h.vr] {
		if _, err := r.bytes(2); err != nil {
			return h, err
		}
		h.length, err = r.u32()
		return h, err
	}
	l, err := r.u16()
	h.length = uint32(l)
	return h, err
}

// skipSequence skips the items of a sequence (or of encapsulated data) of undefined
// length, up to and including its sequence delimiter. implicit is the items' encoding:
// a UN element of undefined length holds implicit VR items whatever the file's syntax.
func (r *reader) skipSequence(implicit bool, depth int, owner header) error {
	if depth > maxDepth {
		return fmt.Errorf("sequences nested over %d deep at byte %d", maxDepth, owner.at)
	}
	for {
		h, err := r.header(true) // item tags have no VR
		if err != nil {
			return fmt.Errorf("sequence %s at byte %d: %w", tagString(owner.tag), owner.at, err)
		}
		switch h.tag {
		case tagSequenceDelimiter:
			return nil
		case tagItem:
			if h.length == undefinedLength {
				if err := r.skipItem(implicit, depth, owner); err != nil {
					return err
				}
			} else if _, err := r.bytes(h.length); err != nil {
				return fmt.Errorf("item at byte %d declares %d bytes, %d left: %w", h.at, h.length, r.left(), err)
			}
		default:
			return fmt.Errorf("sequence %s at byte %d: element %s at byte %d where an item or the sequence's end belongs", tagString(owner.tag), owner.at, tagString(h.tag), h.at)
		}
	}
}

// skipItem skips the elements of an item of undefined length, up to and including its
// item delimiter.
func (r *reader) skipItem(implicit bool, depth int, owner header) error {
	for {
		h, err := r.header(implicit)
		if err != nil {
			return fmt.Errorf("item of sequence %s at byte %d: %w", tagString(owner.tag), owner.at, err)
		}
		if h.tag == tagItemDelimiter {
			return nil
		}
		if err := r.skipValue(h, implicit, depth+1); err != nil {
			return err
		}
	}
}

// skipValue skips an element's value: its length's bytes, or, for an undefined length,
// the sequence it opens.
func (r *reader) skipValue(h header, implicit bool, depth int) error {
	if h.length != undefinedLength {
		if _, err := r.bytes(h.length); err != nil {
			return fmt.Errorf("element %s at byte %d declares %d bytes, %d left: %w", tagString(h.tag), h.at, h.length, r.left(), err)
		}
		return nil
	}
	switch {
	case h.tag>>16 == itemGroup:
		return fmt.Errorf("%s at byte %d outside a sequence", tagString(h.tag), h.at)
	case implicit, h.vr == "SQ":
		// in implicit VR an undefined length can only open a sequence
		return r.skipSequence(implicit, depth, h)
	case h.vr == "UN":
		return r.skipSequence(true, depth, h)
	case h.vr == "OB" || h.vr == "OW":
		// encapsulated pixel data (an icon's): items of bytes, as a sequence's
		return r.skipSequence(implicit, depth, h)
	}
	return fmt.Errorf("element %s at byte %d has VR %s and an undefined length", tagString(h.tag), h.at, h.vr)
}

// attrs holds the values Decode reads, raw.
type attrs map[uint32][]byte

// decode reads a Part 10 file.
func decode(b []byte) (*Image, error) {
	if len(b) < preambleLength+4 || string(b[preambleLength:preambleLength+4]) != "DICM" {
		return nil, errors.New("not a DICOM Part 10 file (no \"DICM\" after the 128-byte preamble)")
	}
	r := &reader{b: b, pos: preambleLength + 4}
	syntax, err := r.metaSyntax()
	if err != nil {
		return nil, err
	}
	var implicit, encapsulated bool
	switch syntax {
	case "":
		return nil, errors.New("the file meta group has no Transfer Syntax UID (0002,0010)")
	case ExplicitVRLittleEndian:
	case ImplicitVRLittleEndian:
		implicit = true
	case JPEGBaseline:
		encapsulated = true
	default:
		what := syntaxNames[syntax]
		if what != "" {
			what = " (" + what + ")"
		}
		return nil, fmt.Errorf("unsupported transfer syntax %s%s; pfl reads explicit and implicit VR little endian and JPEG baseline", clip(syntax), what)
	}
	a, pixel, err := r.dataset(implicit)
	if err != nil {
		return nil, err
	}
	img, err := a.image(syntax)
	if err != nil {
		return nil, err
	}
	values, err := r.pixelValues(pixel, encapsulated, img, a)
	if err != nil {
		return nil, err
	}
	if err := a.display(values, img); err != nil {
		return nil, err
	}
	return img, nil
}

// metaSyntax reads the file meta group, explicit VR little endian whatever the dataset's
// syntax, while the next tag is in group 0002 (its group length is not always right), and
// returns its Transfer Syntax UID ("" when it has none).
func (r *reader) metaSyntax() (string, error) {
	var syntax string
	for r.left() >= 2 && binary.LittleEndian.Uint16(r.b[r.pos:]) == metaGroup {
		h, err := r.header(false)
		if errors.Is(err, errTruncated) {
			return "", fmt.Errorf("file meta element at byte %d: %w", h.at, err)
		} else if err != nil {
			return "", fmt.Errorf("file meta: %w", err)
		}
		if h.length == undefinedLength {
			return "", fmt.Errorf("file meta element %s at byte %d has an undefined length", tagString(h.tag), h.at)
		}
		v, err := r.bytes(h.length)
		if err != nil {
			return "", fmt.Errorf("file meta element %s at byte %d declares %d bytes, %d left: %w", tagString(h.tag), h.at, h.length, r.left(), err)
		}
		if h.tag == tagTransferSyntax {
			syntax = text(v)
		}
	}
	return syntax, nil
}

// dataset walks the dataset up to the Pixel Data element, keeping the values Decode reads,
// and returns them with Pixel Data's header (its value is next).
func (r *reader) dataset(implicit bool) (attrs, header, error) {
	a := attrs{}
	for r.left() > 0 {
		h, err := r.header(implicit)
		if errors.Is(err, errTruncated) {
			return nil, header{}, fmt.Errorf("element at byte %d: %w", h.at, err)
		} else if err != nil {
			return nil, header{}, err // says where
		}
		if h.tag == tagPixelData {
			return a, h, nil
		}
		if _, want := names[h.tag]; want && h.length != undefinedLength {
			v, err := r.bytes(h.length)
			if err != nil {
				return nil, header{}, fmt.Errorf("element %s at byte %d declares %d bytes, %d left: %w", tagString(h.tag), h.at, h.length, r.left(), err)
			}
			a[h.tag] = v
			continue
		}
		if err := r.skipValue(h, implicit, 1); err != nil {
			return nil, header{}, err
		}
	}
	return nil, header{}, errors.New("no Pixel Data (7FE0,0010)")
}

// pixelValues decodes the Pixel Data whose header is pixel: a JPEG baseline frame from its
// fragments when encapsulated, the native samples otherwise.
func (r *reader) pixelValues(pixel header, encapsulated bool, img *Image, a attrs) ([]float64, error) {
	if encapsulated {
		if pixel.length != undefinedLength {
			return nil, fmt.Errorf("Pixel Data at byte %d has a defined length under JPEG baseline, which encapsulates it (undefined length, items)", pixel.at)
		}
		frame, err := r.fragments(pixel)
		if err != nil {
			return nil, err
		}
		return jpegValues(frame, img)
	}
	if pixel.length == undefinedLength {
		return nil, fmt.Errorf("Pixel Data at byte %d has an undefined length (encapsulated) under an uncompressed transfer syntax", pixel.at)
	}
	v, err := r.bytes(pixel.length)
	if err != nil {
		return nil, fmt.Errorf("Pixel Data at byte %d declares %d bytes, %d left: %w", pixel.at, pixel.length, r.left(), err)
	}
	return nativeValues(v, img, a)
}

// text is a string value without its padding (a trailing space or NUL) and spaces.
func text(v []byte) string {
	return strings.TrimSpace(strings.TrimRight(string(v), "\x00"))
}

// us reads an unsigned short attribute; ok is false when the file lacks it.
func (a attrs) us(tag uint32) (v int, ok bool, err error) {
	b, ok := a[tag]
	if !ok {
		return 0, false, nil
	}
	if len(b) < 2 {
		return 0, true, fmt.Errorf("%s has %d bytes, want 2 (US)", tagString(tag), len(b))
	}
	return int(binary.LittleEndian.Uint16(b)), true, nil
}

// ds reads the first value of a decimal string attribute (Window Center and Width may
// list several windows; the first is the default one).
func (a attrs) ds(tag uint32) (v float64, ok bool, err error) {
	b, ok := a[tag]
	if !ok {
		return 0, false, nil
	}
	s, _, _ := strings.Cut(text(b), `\`)
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, nil // an empty value is an absent one (type 2 and 3 attributes)
	}
	v, err = strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, true, fmt.Errorf("%s is %s, not a finite decimal number", tagString(tag), clip(s))
	}
	return v, true, nil
}

// image checks the image pixel attributes and returns the Image to fill.
func (a attrs) image(syntax string) (*Image, error) {
	img := &Image{TransferSyntax: syntax}
	need := func(tag uint32) (int, error) {
		v, ok, err := a.us(tag)
		if err == nil && !ok {
			err = fmt.Errorf("no %s", tagString(tag))
		}
		return v, err
	}
	var err error
	if img.Rows, err = need(tagRows); err != nil {
		return nil, err
	}
	if img.Columns, err = need(tagColumns); err != nil {
		return nil, err
	}
	if img.BitsAllocated, err = need(tagBitsAllocated); err != nil {
		return nil, err
	}
	if spp, ok, err := a.us(tagSamplesPerPixel); err != nil {
		return nil, err
	} else if ok && spp != 1 {
		return nil, fmt.Errorf("unsupported Samples per Pixel %d (colour); pfl reads greyscale images, 1", spp)
	}
	p, ok := a[tagPhotometric]
	if !ok {
		return nil, fmt.Errorf("no %s", tagString(tagPhotometric))
	}
	switch img.Photometric = text(p); img.Photometric {
	case "MONOCHROME1", "MONOCHROME2":
	default:
		return nil, fmt.Errorf("unsupported Photometric Interpretation %s; pfl reads MONOCHROME1 and MONOCHROME2", clip(img.Photometric))
	}
	if f, ok := a[tagFrames]; ok {
		if s := text(f); s != "" && s != "1" {
			return nil, fmt.Errorf("unsupported Number of Frames %s; pfl reads single-frame images", clip(s))
		}
	}
	switch {
	case img.Rows == 0 || img.Columns == 0:
		return nil, fmt.Errorf("%d Rows × %d Columns: an empty image", img.Rows, img.Columns)
	case img.Rows*img.Columns > MaxPixels:
		return nil, fmt.Errorf("%d Rows × %d Columns, over the %d pixels pfl reads", img.Rows, img.Columns, MaxPixels)
	case img.BitsAllocated != 8 && img.BitsAllocated != 16:
		return nil, fmt.Errorf("unsupported Bits Allocated %d; pfl reads 8 and 16", img.BitsAllocated)
	case syntax == JPEGBaseline && img.BitsAllocated != 8:
		return nil, fmt.Errorf("Bits Allocated %d under JPEG baseline, which holds 8-bit samples", img.BitsAllocated)
	}
	return img, nil
}

// bits returns Bits Stored and Pixel Representation, checked against Bits Allocated.
func (a attrs) bits(allocated int) (stored int, signed bool, err error) {
	stored, ok, err := a.us(tagBitsStored)
	if err != nil {
		return 0, false, err
	}
	if !ok {
		stored = allocated
	}
	if stored < 1 || stored > allocated {
		return 0, false, fmt.Errorf("Bits Stored %d with Bits Allocated %d", stored, allocated)
	}
	if hb, ok, err := a.us(tagHighBit); err != nil {
		return 0, false, err
	} else if ok && hb != stored-1 {
		return 0, false, fmt.Errorf("unsupported High Bit %d with Bits Stored %d; pfl reads samples in the low bits (High Bit = Bits Stored − 1)", hb, stored)
	}
	pr, _, err := a.us(tagPixelRepresent)
	if err != nil {
		return 0, false, err
	}
	if pr > 1 {
		return 0, false, fmt.Errorf("Pixel Representation %d; want 0 (unsigned) or 1 (two's complement)", pr)
	}
	return stored, pr == 1, nil
}

// nativeValues reads uncompressed samples: Bits Stored bits of each 8- or 16-bit word,
// sign-extended for Pixel Representation 1.
func nativeValues(v []byte, img *Image, a attrs) ([]float64, error) {
	n := img.Rows * img.Columns
	bytesPer := img.BitsAllocated / 8
	if len(v) < n*bytesPer {
		return nil, fmt.Errorf("Pixel Data holds %d bytes; %d Rows × %d Columns × %d bits need %d (truncated?)", len(v), img.Rows, img.Columns, img.BitsAllocated, n*bytesPer)
	}
	stored, signed, err := a.bits(img.BitsAllocated)
	if err != nil {
		return nil, err
	}
	mask := uint32(1)<<stored - 1
	sign := uint32(1) << (stored - 1)
	out := make([]float64, n)
	for i := range out {
		var w uint32
		if bytesPer == 1 {
			w = uint32(v[i])
		} else {
			w = uint32(binary.LittleEndian.Uint16(v[2*i:]))
		}
		w &= mask // the bits above Bits Stored may hold overlays or garbage
		x := float64(w)
		if signed && w&sign != 0 {
			x -= float64(mask) + 1
		}
		out[i] = x
	}
	return out, nil
}

// fragments reads encapsulated pixel data (PS3.5 A.4): a basic offset table item, then
// fragment items up to the sequence delimiter. A single frame may span several
// fragments: they are concatenated.
func (r *reader) fragments(pixel header) ([]byte, error) {
	var frame []byte
	for i := 0; ; i++ {
		h, err := r.header(true)
		if err != nil {
			return nil, fmt.Errorf("encapsulated Pixel Data at byte %d: item %d: %w (no sequence delimiter)", pixel.at, i, err)
		}
		if h.tag == tagSequenceDelimiter {
			break
		}
		if h.tag != tagItem {
			return nil, fmt.Errorf("encapsulated Pixel Data: element %s at byte %d where an item belongs", tagString(h.tag), h.at)
		}
		if h.length == undefinedLength {
			return nil, fmt.Errorf("encapsulated Pixel Data: item at byte %d has an undefined length", h.at)
		}
		if i >= encapsulatedItemLimit {
			return nil, fmt.Errorf("encapsulated Pixel Data: over %d items", encapsulatedItemLimit)
		}
		v, err := r.bytes(h.length)
		if err != nil {
			return nil, fmt.Errorf("encapsulated Pixel Data: item at byte %d declares %d bytes, %d left: %w", h.at, h.length, r.left(), err)
		}
		if i == 0 { // the basic offset table: one 4-byte offset per frame, or empty
			if len(v)%4 != 0 || len(v) > 4 {
				return nil, fmt.Errorf("unsupported basic offset table of %d bytes (%d frames); pfl reads single-frame images", len(v), len(v)/4)
			}
			continue
		}
		frame = append(frame, v...)
	}
	if len(frame) == 0 {
		return nil, errors.New("encapsulated Pixel Data holds no fragments")
	}
	return frame, nil
}

// jpegValues decodes a baseline JPEG frame, which must be greyscale and of the header's
// size.
func jpegValues(frame []byte, img *Image) ([]float64, error) {
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(frame))
	if err != nil {
		return nil, fmt.Errorf("JPEG baseline frame: %w", err)
	}
	if cfg.Width != img.Columns || cfg.Height != img.Rows {
		return nil, fmt.Errorf("JPEG frame is %d×%d pixels, the header says %d Columns × %d Rows", cfg.Width, cfg.Height, img.Columns, img.Rows)
	}
	if cfg.Width*cfg.Height > maxJPEGPixelsPerByte*len(frame) {
		return nil, fmt.Errorf("JPEG frame declares %d×%d pixels in %d bytes (truncated or corrupt)", cfg.Width, cfg.Height, len(frame))
	}
	m, err := jpeg.Decode(bytes.NewReader(frame))
	if err != nil {
		return nil, fmt.Errorf("JPEG baseline frame: %w", err)
	}
	g, ok := m.(*image.Gray)
	if !ok {
		return nil, fmt.Errorf("JPEG frame decodes to %T, not greyscale, under Photometric Interpretation %s", m, img.Photometric)
	}
	if r := g.Bounds(); r.Dx() != img.Columns || r.Dy() != img.Rows {
		return nil, fmt.Errorf("JPEG frame decodes to %d×%d pixels, the header says %d×%d", r.Dx(), r.Dy(), img.Columns, img.Rows)
	}
	out := make([]float64, 0, img.Rows*img.Columns)
	for y := range img.Rows {
		for _, v := range g.Pix[y*g.Stride : y*g.Stride+img.Columns] {
			out = append(out, float64(v))
		}
	}
	return out, nil
}

// display maps stored values to img.Pixels: modality rescale, window or min–max, then
// MONOCHROME1's inversion.
func (a attrs) display(values []float64, img *Image) error {
	slope, ok, err := a.ds(tagRescaleSlope)
	if err != nil {
		return err
	}
	if !ok {
		slope = 1
	}
	intercept, _, err := a.ds(tagRescaleIntercept)
	if err != nil {
		return err
	}
	for i, v := range values {
		if values[i] = v*slope + intercept; math.IsInf(values[i], 0) {
			return fmt.Errorf("Rescale Slope %g and Intercept %g overflow a stored value %g", slope, intercept, v)
		}
	}
	center, okC, err := a.ds(tagWindowCenter)
	if err != nil {
		return err
	}
	width, okW, err := a.ds(tagWindowWidth)
	if err != nil {
		return err
	}
	img.Pixels = make([]uint8, len(values))
	// A width below 1 is invalid (PS3.3 C.11.2.1.2): such a window is ignored.
	if img.Windowed = okC && okW && width >= 1; img.Windowed {
		// PS3.3 C.11.2.1.2.1, the linear function, onto [0, 255]
		lo, hi := center-0.5-(width-1)/2, center-0.5+(width-1)/2
		for i, x := range values {
			switch {
			case x <= lo:
				img.Pixels[i] = 0
			case x > hi:
				img.Pixels[i] = 255
			default:
				img.Pixels[i] = toByte(((x-(center-0.5))/(width-1) + 0.5) * 255)
			}
		}
	} else {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range values {
			lo, hi = min(lo, x), max(hi, x)
		}
		if hi > lo { // a constant image stays 0
			for i, x := range values {
				img.Pixels[i] = toByte((x - lo) / (hi - lo) * 255)
			}
		}
	}
	if img.Photometric == "MONOCHROME1" { // 0 is white: invert so that higher is brighter
		for i, v := range img.Pixels {
			img.Pixels[i] = 255 - v
		}
	}
	return nil
}

// toByte rounds v to the nearest integer in [0, 255].
func toByte(v float64) uint8 {
	return uint8(min(max(math.Round(v), 0), 255))
}
