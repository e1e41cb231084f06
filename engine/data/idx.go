package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FashionMNISTDir is where Debian's dataset-fashion-mnist package installs the four
// gzipped IDX files of Fashion-MNIST.
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// fashionMNISTClasses are Fashion-MNIST's class names, in label order.
var fashionMNISTClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// maybeGunzip returns r's bytes, decompressed when they start with the gzip magic 1f 8b.
func maybeGunzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("bad gzip stream: %w", err)
		}
		return gunzipReader{zr}, nil
	}
	return br, nil
}

// maxIDXBytes bounds the data ReadIDX reads from one file (4 GiB, far above an MNIST-layout
// dataset's images): a header that declares more is refused before anything is read, so
// that a damaged file or a gzip bomb cannot exhaust the memory.
const maxIDXBytes = 1 << 32

// ReadIDX reads an IDX file (the format of MNIST, Fashion-MNIST and EMNIST), gzipped or
// not (told by the gzip magic, not the name): two zero bytes, a type byte, the number of
// dimensions, big-endian uint32 dimensions, then the data. Only the uint8 type (0x08) is
// supported, with at most 3 dimensions (labels have 1, images 3). The data must be
// exactly as long as the dimensions say; no more than that (and at most maxIDXBytes) is
// decompressed, whatever the file holds.
func ReadIDX(r io.Reader) (dims []int, data []uint8, err error) {
	r, err = maybeGunzip(r)
	if err != nil {
		return nil, nil, err
	}
	if dims, err = readIDXHeader(r); err != nil {
		return nil, nil, err
	}
	size, ok := boundedProduct(dims, 1, maxIDXBytes)
	if !ok {
		return nil, nil, fmt.Errorf("IDX dimensions %s declare more than %d GiB of data, more than pfl reads from one file (a damaged file?)", dimsString(dims), maxIDXBytes>>30)
	}
	// read as the bytes come (not all size bytes at once): a short file costs no more
	// memory than it holds
	var buf bytes.Buffer
	buf.Grow(min(size, 64<<20))
	if _, err := buf.ReadFrom(io.LimitReader(r, int64(size))); err != nil {
		return nil, nil, err
	}
	if data = buf.Bytes(); len(data) < size {
		return nil, nil, fmt.Errorf("IDX dimensions %s declare %d data bytes, file holds %d (truncated)", dimsString(dims), size, len(data))
	}
	// a little past the end tells trailing data from none, exactly when it is short
	const peek = 1 << 20
	extra, err := io.Copy(io.Discard, io.LimitReader(r, peek))
	switch {
	case err != nil:
		return nil, nil, err
	case extra == peek:
		return nil, nil, fmt.Errorf("IDX dimensions %s declare %d data bytes, file holds more than %d", dimsString(dims), size, size+peek)
	case extra > 0:
		return nil, nil, fmt.Errorf("IDX dimensions %s declare %d data bytes, file holds %d", dimsString(dims), size, size+int(extra))
	}
	return dims, data, nil
}

// readIDXHeader reads and checks an IDX header and returns its dimensions.
func readIDXHeader(r io.Reader) ([]int, error) {
	var head [4]byte
	if n, err := io.ReadFull(r, head[:]); err != nil {
		return nil, headerErr(err, fmt.Sprintf("truncated IDX header: %d bytes", n))
	}
	if head[0] != 0 || head[1] != 0 {
		return nil, fmt.Errorf("bad IDX magic % x (want 00 00)", head[:2])
	}
	if head[2] != 0x08 {
		return nil, fmt.Errorf("unsupported IDX type byte 0x%02x (only 0x08, uint8)", head[2])
	}
	nd := int(head[3])
	if nd == 0 || nd > maxIDXDims {
		return nil, fmt.Errorf("IDX file declares %d dimensions, want 1 (labels) or 3 (images)", nd)
	}
	b := make([]byte, 4*nd)
	if n, err := io.ReadFull(r, b); err != nil {
		return nil, headerErr(err, fmt.Sprintf("truncated IDX header: %d bytes for %d dimensions", 4+n, nd))
	}
	dims := make([]int, nd)
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(b[4*i:]))
	}
	return dims, nil
}

// headerErr is msg for a header cut short, else the read error itself.
func headerErr(err error, msg string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New(msg)
	}
	return err
}

// gunzipReader names its errors as the gzip stream's, apart from the end of the stream
// (a truncated stream ends with io.ErrUnexpectedEOF from the decompressor: named too).
type gunzipReader struct{ zr *gzip.Reader }

// Read decompresses into p.
func (g gunzipReader) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("bad gzip stream: %w", err)
	}
	return n, err
}

// maxIDXDims is the most dimensions ReadIDX accepts: pfl reads labels [N] and images
// [N, H, W].
const maxIDXDims = 3

// boundedProduct returns item·Π dims and true when that is at most limit, without
// overflowing; it returns false when the product exceeds limit.
func boundedProduct(dims []int, item, limit int) (int, bool) {
	for _, d := range dims {
		if d == 0 {
			return 0, true
		}
	}
	p := item
	for _, d := range dims {
		if d < 0 || p > limit/d {
			return 0, false
		}
		p *= d
	}
	return p, p <= limit
}

// readIDXFile reads an IDX file, naming it in errors.
func readIDXFile(path string) ([]int, []uint8, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	dims, b, err := ReadIDX(f)
	if err != nil {
		return nil, nil, fmt.Errorf("data: %s: %w", path, err)
	}
	return dims, b, nil
}

// LoadIDX loads an image set from an IDX image file of [N, H, W] uint8 pixels (one
// channel) and an IDX label file of N labels in [0, classes).
func LoadIDX(name, imagesPath, labelsPath string, classes int) (*Images, error) {
	if classes <= 0 {
		return nil, fmt.Errorf("data: %s: %d classes, want > 0", imagesPath, classes)
	}
	idims, pix, err := readIDXFile(imagesPath)
	if err != nil {
		return nil, err
	}
	ldims, lab, err := readIDXFile(labelsPath)
	if err != nil {
		return nil, err
	}
	if len(idims) != 3 {
		return nil, fmt.Errorf("data: %s: images have %d dimensions %s, want 3 [N, H, W]", imagesPath, len(idims), dimsString(idims))
	}
	if len(ldims) != 1 {
		return nil, fmt.Errorf("data: %s: labels have %d dimensions %s, want 1 [N]", labelsPath, len(ldims), dimsString(ldims))
	}
	switch {
	case idims[0] == 0:
		return nil, fmt.Errorf("data: %s holds no images", imagesPath)
	case idims[1] == 0 || idims[2] == 0:
		return nil, fmt.Errorf("data: %s: bad geometry: images of %d×%d pixels", imagesPath, idims[1], idims[2])
	case idims[0] != ldims[0]:
		return nil, fmt.Errorf("data: %s holds %d images but %s holds %d labels", imagesPath, idims[0], labelsPath, ldims[0])
	}
	labels := make([]int64, len(lab))
	for i, l := range lab {
		if int(l) >= classes {
			return nil, fmt.Errorf("data: %s: label %d of record %d is outside [0, %d)", labelsPath, l, i, classes)
		}
		labels[i] = int64(l)
	}
	x := &Images{Name: name, Source: imagesPath, N: idims[0], C: 1, H: idims[1], W: idims[2], Pixels: pix, Labels: labels, Classes: classes}
	if err := x.Validate(); err != nil {
		return nil, err
	}
	return x, nil
}

// idxPath returns dir/base, or dir/base.gz when only that exists.
func idxPath(dir, base string) (string, error) {
	p := filepath.Join(dir, base)
	for _, q := range []string{p, p + ".gz"} {
		if _, err := os.Stat(q); err == nil {
			return q, nil
		}
	}
	return "", fmt.Errorf("data: %s: neither %s nor %s.gz exists", dir, base, base)
}

// LoadMNISTDir loads an MNIST-layout folder: train-images-idx3-ubyte,
// train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each
// optionally gzipped with a .gz suffix. The parts are named name+"/train" and
// name+"/test".
func LoadMNISTDir(name, dir string, classes int) (*Split, error) {
	var parts [2]*Images
	for i, p := range []string{"train", "t10k"} {
		ip, err := idxPath(dir, p+"-images-idx3-ubyte")
		if err != nil {
			return nil, err
		}
		lp, err := idxPath(dir, p+"-labels-idx1-ubyte")
		if err != nil {
			return nil, err
		}
		part := name + "/" + [2]string{"train", "test"}[i]
		if parts[i], err = LoadIDX(part, ip, lp, classes); err != nil {
			return nil, err
		}
	}
	return newSplit(parts[0], parts[1])
}

// FashionMNIST loads Fashion-MNIST (10 classes of 28×28 greyscale clothes, 60,000 train
// and 10,000 test) from dir, or from FashionMNISTDir when dir is "".
func FashionMNIST(dir string) (*Split, error) {
	if dir == "" {
		dir = FashionMNISTDir
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("data: Fashion-MNIST folder %s is missing: install it with `apt-get install dataset-fashion-mnist` (Debian), fetch it with `pfl data get fashion-mnist`, or point at a folder holding the four IDX files", dir)
	}
	s, err := LoadMNISTDir("fashion-mnist", dir, len(fashionMNISTClasses))
	if err != nil {
		return nil, err
	}
	s.Train.ClassNames = append([]string(nil), fashionMNISTClasses...)
	s.Test.ClassNames = append([]string(nil), fashionMNISTClasses...)
	return s, nil
}
