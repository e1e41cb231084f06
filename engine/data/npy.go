package data

import (
	"archive/zip"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// NpyArray is an array read from a NumPy .npy file: its dtype descriptor (e.g. "|u1",
// "<i8"), its shape (empty for a scalar) and its raw little-endian C-order data.
type NpyArray struct {
	Descr string
	Shape []int
	Data  []byte
}

// npyItemSize is the byte size of each supported descr.
var npyItemSize = map[string]int{"|u1": 1, "|b1": 1, "<i4": 4, "<i8": 8, "<f4": 4, "<f8": 8}

// ReadNpy reads a .npy file of format version 1.0, 2.0 or 3.0 holding a C-order array
// of dtype |u1, |b1, <i4, <i8, <f4 or <f8. The data must be exactly as long as the
// shape says.
func ReadNpy(r io.Reader) (*NpyArray, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return parseNpy(b)
}

// parseNpy parses the .npy file b; the array's Data is a sub-slice of b.
func parseNpy(b []byte) (*NpyArray, error) {
	a, start, size, err := npyHeader(b)
	if err != nil {
		return nil, err
	}
	a.Data = b[start:]
	if uint64(len(a.Data)) < size {
		return nil, fmt.Errorf(".npy shape %s of %s declares more than the %d data bytes present (truncated)", dimsString(a.Shape), a.Descr, len(a.Data))
	}
	if uint64(len(a.Data)) != size {
		return nil, fmt.Errorf(".npy shape %s of %s declares %d data bytes, file holds %d", dimsString(a.Shape), a.Descr, size, len(a.Data))
	}
	return a, nil
}

// maxNpyData bounds the data size a .npy header may declare (1 TiB), so that sizes
// stay far from overflowing.
const maxNpyData = 1 << 40

// errNpyHeaderLen is npyHeader's error for a header longer than the bytes given.
var errNpyHeaderLen = errors.New("truncated .npy header")

// npyHeader parses the preamble and header of the .npy file starting b (b need not hold
// the data): the array without Data, where the data starts, and its declared size.
func npyHeader(b []byte) (a *NpyArray, start, size uint64, err error) {
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		return nil, 0, 0, errors.New("bad .npy magic (want \\x93NUMPY) or truncated header")
	}
	var hlen uint64
	switch b[6] {
	case 1:
		hlen, start = uint64(binary.LittleEndian.Uint16(b[8:])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, 0, 0, errors.New("truncated .npy header")
		}
		hlen, start = uint64(binary.LittleEndian.Uint32(b[8:])), 12
	default:
		return nil, 0, 0, fmt.Errorf("unsupported .npy format version %d.%d", b[6], b[7])
	}
	if start+hlen > uint64(len(b)) {
		return nil, 0, 0, fmt.Errorf("%w: declares %d bytes, %d present", errNpyHeaderLen, hlen, uint64(len(b))-start)
	}
	a = &NpyArray{}
	var fortran bool
	if a.Descr, fortran, a.Shape, err = parseNpyHeader(string(b[start : start+hlen])); err != nil {
		return nil, 0, 0, fmt.Errorf("bad .npy header: %w", err)
	}
	if fortran {
		return nil, 0, 0, errors.New(".npy array is in Fortran order; only C order is supported")
	}
	item, ok := npyItemSize[a.Descr]
	if !ok {
		return nil, 0, 0, fmt.Errorf("unsupported .npy descr %s (want |u1, |b1, <i4, <i8, <f4 or <f8)", clip(a.Descr))
	}
	n, ok := boundedProduct(a.Shape, item, maxNpyData)
	if !ok {
		return nil, 0, 0, fmt.Errorf(".npy shape %s of %s declares more than %d data bytes", dimsString(a.Shape), a.Descr, maxNpyData)
	}
	return a, start + hlen, uint64(n), nil
}

// Int64s returns the elements of an integer (|u1, <i4, <i8) or boolean (|b1, as 0 or
// 1) array as int64s.
func (a *NpyArray) Int64s() ([]int64, error) {
	item, ok := npyItemSize[a.Descr]
	if !ok || a.Descr[1] == 'f' {
		return nil, fmt.Errorf("cannot read .npy descr %q as integers", a.Descr)
	}
	if len(a.Data)%item != 0 {
		return nil, fmt.Errorf(".npy data of %d bytes is not a whole number of %s", len(a.Data), a.Descr)
	}
	out := make([]int64, len(a.Data)/item)
	for i := range out {
		p := a.Data[i*item:]
		switch a.Descr {
		case "|u1":
			out[i] = int64(p[0])
		case "|b1":
			if p[0] != 0 {
				out[i] = 1
			}
		case "<i4":
			out[i] = int64(int32(binary.LittleEndian.Uint32(p)))
		case "<i8":
			out[i] = int64(binary.LittleEndian.Uint64(p))
		}
	}
	return out, nil
}

// Uint8s returns the data of a |u1 array (the same slice, not a copy).
func (a *NpyArray) Uint8s() ([]uint8, error) {
	if a.Descr != "|u1" {
		return nil, fmt.Errorf("cannot read .npy descr %q as uint8", a.Descr)
	}
	return a.Data, nil
}

// parseNpyHeader parses the Python dict literal of a .npy header, e.g.
// {'descr': '|u1', 'fortran_order': False, 'shape': (60000, 28, 28), }.
func parseNpyHeader(h string) (descr string, fortran bool, shape []int, err error) {
	p := &pyScanner{s: h}
	if !p.eat('{') {
		return "", false, nil, errors.New("not a dict")
	}
	seen := map[string]bool{}
	for !p.eat('}') {
		key, ok := p.str()
		if !ok || !p.eat(':') {
			return "", false, nil, fmt.Errorf("bad dict entry at byte %d", p.i)
		}
		switch key {
		case "descr":
			descr, ok = p.str()
		case "fortran_order":
			fortran, ok = p.boolean()
		case "shape":
			shape, ok = p.tuple()
		default:
			return "", false, nil, fmt.Errorf("unknown key %s", clip(key))
		}
		if !ok || seen[key] {
			return "", false, nil, fmt.Errorf("bad or repeated value for %s", clip(key))
		}
		seen[key] = true
		if !p.eat(',') {
			if !p.eat('}') {
				return "", false, nil, fmt.Errorf("expected , or } at byte %d", p.i)
			}
			break
		}
	}
	if p.skip(); p.i != len(p.s) {
		return "", false, nil, fmt.Errorf("trailing bytes after the dict at byte %d", p.i)
	}
	if !seen["descr"] || !seen["fortran_order"] || !seen["shape"] {
		return "", false, nil, errors.New("missing descr, fortran_order or shape")
	}
	return descr, fortran, shape, nil
}

// pyScanner reads the few Python literals of a .npy header.
type pyScanner struct {
	s string
	i int
}

func (p *pyScanner) skip() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyScanner) eat(c byte) bool {
	if p.skip(); p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyScanner) str() (string, bool) {
	p.skip()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", false
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, true
}

func (p *pyScanner) boolean() (bool, bool) {
	p.skip()
	for _, w := range []string{"True", "False"} {
		if strings.HasPrefix(p.s[p.i:], w) {
			p.i += len(w)
			return w == "True", true
		}
	}
	return false, false
}

// tuple reads a tuple of non-negative ints such as (), (3,) or (2, 3L).
func (p *pyScanner) tuple() ([]int, bool) {
	if !p.eat('(') {
		return nil, false
	}
	out := []int{}
	for !p.eat(')') {
		p.skip()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		v, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil || v > math.MaxInt32*int64(math.MaxInt32) {
			return nil, false
		}
		out = append(out, int(v))
		if p.i = j; p.i < len(p.s) && p.s[p.i] == 'L' {
			p.i++
		}
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, false
			}
			break
		}
	}
	return out, true
}

// LoadMedMNIST loads a MedMNIST .npz file (e.g. organamnist.npz, 11 classes) holding
// train_images.npy, train_labels.npy, val_images.npy, val_labels.npy, test_images.npy
// and test_labels.npy: uint8 images [N, H, W] or [N, H, W, 3] (transposed to CHW) and
// integer labels [N, 1] or [N] in [0, classes). MedMNIST's own split is kept, except
// that its validation part (if present) is appended to Train, since pfl's clients hold
// out their own validation data: Train = train + val, Test = test.
func LoadMedMNIST(name, path string, classes int) (*Split, error) {
	if classes <= 0 {
		return nil, fmt.Errorf("data: %s: %d classes, want > 0", path, classes)
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("data: %s: not a readable .npz (zip) archive: %w", path, err)
	}
	defer zr.Close()
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	z := &npzArchive{path: path, size: uint64(st.Size()), members: map[string]*zip.File{}}
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".npy") {
			continue
		}
		if z.members[f.Name] != nil {
			return nil, fmt.Errorf("data: %s: two members named %s", path, clip(f.Name))
		}
		z.members[f.Name] = f
	}
	load := func(prefix string) (*Images, error) {
		x := &Images{Name: name, Classes: classes}
		if err := z.part(prefix, x); err != nil {
			return nil, err
		}
		return x, nil
	}
	train, err := load("train")
	if err != nil {
		return nil, err
	}
	if z.members["val_images.npy"] != nil || z.members["val_labels.npy"] != nil {
		val, err := load("val")
		if err != nil {
			return nil, err
		}
		if val.C != train.C || val.H != train.H || val.W != train.W {
			return nil, fmt.Errorf("data: %s: val images are %s, train images %s", path, val.shape(), train.shape())
		}
		train.N += val.N
		train.Pixels = append(train.Pixels, val.Pixels...)
		train.Labels = append(train.Labels, val.Labels...)
		train.Source = path + ":train_images.npy and val_images.npy"
	}
	test, err := load("test")
	if err != nil {
		return nil, err
	}
	train.Name, test.Name = name+"/train", name+"/test"
	return newSplit(train, test)
}

// npzMaxRatio bounds how much an .npz member may expand: deflate cannot expand more
// than 1032:1, so a member declaring more is corrupt (or a zip bomb) and is refused
// before it is read.
const npzMaxRatio = 1100

// npzArchive is an open .npz archive: its path, its size in bytes and its .npy members.
type npzArchive struct {
	path    string
	size    uint64
	members map[string]*zip.File
}

// maxNpyHeaderRead is how much of an .npz member is read before its .npy header is
// parsed: NumPy writes headers of a few hundred bytes (and by default reads none over
// 10,000).
const maxNpyHeaderRead = 1 << 16

// read reads the .npy member f. Its compressed size must fit in the archive and its
// uncompressed size be within npzMaxRatio of that; its header is read first and must
// declare that uncompressed size. Only then is the data read, into a buffer of exactly
// that size, and its checksum checked. So memory stays within npzMaxRatio times the
// archive's size, however the member's sizes lie.
func (z *npzArchive) read(f *zip.File) (*NpyArray, error) {
	where := z.path + ":" + f.Name
	size := f.UncompressedSize64
	if f.CompressedSize64 > z.size || size/npzMaxRatio > f.CompressedSize64 {
		return nil, fmt.Errorf("data: %s: member declares %d bytes from %d compressed in a %d-byte archive (corrupt archive or zip bomb)", where, size, f.CompressedSize64, z.size)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", where, err)
	}
	defer rc.Close()
	corrupt := func(err error) error {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("data: %s: corrupt archive member: %w", where, err)
	}
	head := make([]byte, min(size, maxNpyHeaderRead))
	if _, err := io.ReadFull(rc, head); err != nil {
		return nil, corrupt(err)
	}
	_, start, n, err := npyHeader(head)
	if errors.Is(err, errNpyHeaderLen) && uint64(len(head)) < size {
		return nil, fmt.Errorf("data: %s: .npy header over %d bytes", where, len(head))
	} else if err != nil {
		return nil, fmt.Errorf("data: %s: %w", where, err)
	}
	if start+n != size {
		return nil, fmt.Errorf("data: %s: member holds %d bytes but its .npy header declares %d", where, size, start+n)
	}
	b := make([]byte, size)
	copy(b, head)
	if _, err := io.ReadFull(rc, b[len(head):]); err != nil {
		return nil, corrupt(err)
	}
	if extra, err := io.Copy(io.Discard, rc); err != nil || extra != 0 { // reading to EOF checks the CRC
		return nil, corrupt(cmp.Or(err, errors.New("longer than declared")))
	}
	a, err := parseNpy(b)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", where, err)
	}
	return a, nil
}

// part reads prefix_images.npy and prefix_labels.npy of a MedMNIST .npz into x.
func (z *npzArchive) part(prefix string, x *Images) error {
	read := func(member string) (*NpyArray, string, error) {
		where := z.path + ":" + member
		f := z.members[member]
		if f == nil {
			return nil, where, fmt.Errorf("data: %s: member missing", where)
		}
		a, err := z.read(f)
		return a, where, err
	}
	im, iw, err := read(prefix + "_images.npy")
	if err != nil {
		return err
	}
	lb, lw, err := read(prefix + "_labels.npy")
	if err != nil {
		return err
	}
	x.Source = iw
	pix, err := im.Uint8s()
	if err != nil {
		return fmt.Errorf("data: %s: %w", iw, err)
	}
	s := im.Shape
	switch {
	case len(s) == 3:
		x.N, x.C, x.H, x.W = s[0], 1, s[1], s[2]
		x.Pixels = pix
	case len(s) == 4 && (s[3] == 3 || s[3] == 1):
		x.N, x.C, x.H, x.W = s[0], s[3], s[1], s[2]
		x.Pixels = hwcToCHW(pix, x.N, x.H, x.W, x.C)
	default:
		return fmt.Errorf("data: %s: images have shape %s, want [N, H, W] or [N, H, W, 3]", iw, dimsString(s))
	}
	switch {
	case x.N == 0:
		return fmt.Errorf("data: %s holds no images", iw)
	case x.H == 0 || x.W == 0:
		return fmt.Errorf("data: %s: bad geometry: images of %d×%d pixels", iw, x.H, x.W)
	}
	if len(lb.Shape) == 0 || len(lb.Shape) > 2 || (len(lb.Shape) == 2 && lb.Shape[1] != 1) {
		return fmt.Errorf("data: %s: labels have shape %s, want [N] or [N, 1] (multi-label sets are not supported)", lw, dimsString(lb.Shape))
	}
	if lb.Shape[0] != x.N {
		return fmt.Errorf("data: %s holds %d labels for the %d images of %s", lw, lb.Shape[0], x.N, iw)
	}
	if x.Labels, err = lb.Int64s(); err != nil {
		return fmt.Errorf("data: %s: %w", lw, err)
	}
	for i, l := range x.Labels {
		if l < 0 || l >= int64(x.Classes) {
			return fmt.Errorf("data: %s: label %d of sample %d is outside [0, %d)", lw, l, i, x.Classes)
		}
	}
	return nil
}

// hwcToCHW transposes n images from H×W×C to C×H×W.
func hwcToCHW(src []uint8, n, h, w, c int) []uint8 {
	dst := make([]uint8, len(src))
	for i := 0; i < n; i++ {
		img := src[i*h*w*c : (i+1)*h*w*c]
		out := dst[i*h*w*c:]
		for p := 0; p < h*w; p++ {
			for k := 0; k < c; k++ {
				out[k*h*w+p] = img[p*c+k]
			}
		}
	}
	return dst
}
