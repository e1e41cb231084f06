package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
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

// readMaybeGzip reads all of r, decompressing it first when it starts with the gzip
// magic 1f 8b.
func readMaybeGzip(r io.Reader) ([]byte, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("bad gzip stream: %w", err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("bad gzip stream: %w", err)
		}
		return b, nil
	}
	return io.ReadAll(br)
}

// ReadIDX reads an IDX file (the format of MNIST, Fashion-MNIST and EMNIST), gzipped or
// not (told by the gzip magic, not the name): two zero bytes, a type byte, the number of
// dimensions, big-endian uint32 dimensions, then the data. Only the uint8 type (0x08) is
// supported, with at most 3 dimensions (labels have 1, images 3). The data must be
// exactly as long as the dimensions say.
func ReadIDX(r io.Reader) (dims []int, data []uint8, err error) {
	b, err := readMaybeGzip(r)
	if err != nil {
		return nil, nil, err
	}
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("truncated IDX header: %d bytes", len(b))
	}
	if b[0] != 0 || b[1] != 0 {
		return nil, nil, fmt.Errorf("bad IDX magic % x (want 00 00)", b[:2])
	}
	if b[2] != 0x08 {
		return nil, nil, fmt.Errorf("unsupported IDX type byte 0x%02x (only 0x08, uint8)", b[2])
	}
	nd := int(b[3])
	if nd == 0 || nd > maxIDXDims {
		return nil, nil, fmt.Errorf("IDX file declares %d dimensions, want 1 (labels) or 3 (images)", nd)
	}
	if len(b) < 4+4*nd {
		return nil, nil, fmt.Errorf("truncated IDX header: %d bytes for %d dimensions", len(b), nd)
	}
	body := b[4+4*nd:]
	dims = make([]int, nd)
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(b[4+4*i:]))
	}
	size, ok := boundedProduct(dims, 1, len(body))
	if !ok {
		return nil, nil, fmt.Errorf("IDX dimensions %s declare more than the %d data bytes present (truncated)", dimsString(dims), len(body))
	}
	if size != len(body) {
		return nil, nil, fmt.Errorf("IDX dimensions %s declare %d data bytes, file holds %d", dimsString(dims), size, len(body))
	}
	return dims, body, nil
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
