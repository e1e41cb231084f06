package data

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// cifarFormat describes one of the two CIFAR binary versions.
type cifarFormat struct {
	name          string // dataset name, e.g. "cifar10"
	folder        string // the folder inside the official archive
	header        int    // label bytes before each record's c·h·w pixels
	c, h, w       int    // image geometry: 3×32×32 (tests and fuzzing use smaller images)
	classes       int    // fine classes
	coarseClasses int    // 0 when records have no coarse label
	train, test   []string
	names, coarse string // optional class-name files
}

var (
	cifar10Format = cifarFormat{
		name: "cifar10", folder: "cifar-10-batches-bin", header: 1, c: 3, h: 32, w: 32, classes: 10,
		train: []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"},
		test:  []string{"test_batch.bin"}, names: "batches.meta.txt",
	}
	cifar100Format = cifarFormat{
		name: "cifar100", folder: "cifar-100-binary", header: 2, c: 3, h: 32, w: 32, classes: 100, coarseClasses: 20,
		train: []string{"train.bin"}, test: []string{"test.bin"},
		names: "fine_label_names.txt", coarse: "coarse_label_names.txt",
	}
)

// LoadCIFAR10 loads the binary version of CIFAR-10 (10 classes of 32×32 RGB images;
// 50,000 train in data_batch_1.bin..data_batch_5.bin and 10,000 test in
// test_batch.bin). path is the folder holding the .bin files, its parent holding
// cifar-10-batches-bin, or the official cifar-10-binary.tar.gz archive. Class names
// come from batches.meta.txt when present.
func LoadCIFAR10(path string) (*Split, error) { return loadCIFAR(path, &cifar10Format) }

// LoadCIFAR100 loads the binary version of CIFAR-100 (100 fine classes in 20 coarse
// superclasses; train.bin and test.bin). path is the folder holding the .bin files, its
// parent holding cifar-100-binary, or the official cifar-100-binary.tar.gz archive.
// Class names come from fine_label_names.txt and coarse_label_names.txt when present
// (the coarse names are not stored: Images has no field for them).
func LoadCIFAR100(path string) (*Split, error) { return loadCIFAR(path, &cifar100Format) }

func loadCIFAR(root string, f *cifarFormat) (*Split, error) {
	wanted := append(append([]string{f.names}, f.train...), f.test...)
	if f.coarse != "" {
		wanted = append(wanted, f.coarse)
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", f.name, err)
	}
	var files map[string][]byte
	var where func(string) string // a member's name for errors
	if st.IsDir() {
		if sub, err := os.Stat(filepath.Join(root, f.folder)); err == nil && sub.IsDir() {
			root = filepath.Join(root, f.folder)
		}
		where = func(base string) string { return filepath.Join(root, base) }
		files = map[string][]byte{}
		for _, base := range wanted {
			b, err := os.ReadFile(where(base))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("data: %w", err)
			}
			files[base] = b
		}
	} else {
		where = func(base string) string { return root + ":" + base }
		if files, err = readTarGzMembers(root, wanted); err != nil {
			return nil, err
		}
	}
	var names []string
	if b, ok := files[f.names]; ok {
		if names, err = cifarNames(where(f.names), b, f.classes); err != nil {
			return nil, err
		}
	}
	if f.coarse != "" {
		if b, ok := files[f.coarse]; ok {
			if _, err = cifarNames(where(f.coarse), b, f.coarseClasses); err != nil {
				return nil, err
			}
		}
	}
	var parts [2]*Images
	for i, list := range [2][]string{f.train, f.test} {
		x := &Images{Name: f.name + "/" + [2]string{"train", "test"}[i], C: f.c, H: f.h, W: f.w,
			Classes: f.classes, ClassNames: names, CoarseClasses: f.coarseClasses}
		x.Source = where(list[0])
		if len(list) > 1 {
			x.Source += " … " + list[len(list)-1]
		}
		total := 0
		for _, base := range list {
			total += len(files[base]) / (f.header + f.c*f.h*f.w)
		}
		x.Pixels = make([]uint8, 0, total*f.c*f.h*f.w)
		for _, base := range list {
			b, ok := files[base]
			if !ok {
				return nil, fmt.Errorf("data: %s: file missing", where(base))
			}
			if err := parseCIFAR(where(base), b, f, x); err != nil {
				return nil, err
			}
		}
		if err := x.Validate(); err != nil {
			return nil, err
		}
		parts[i] = x
	}
	return newSplit(parts[0], parts[1])
}

// parseCIFAR appends the records of file (its bytes b) to x: a label byte (a coarse
// then a fine label byte for CIFAR-100) followed by x.C·x.H·x.W pixel bytes in CHW
// order (3072 for CIFAR; tests and fuzzing use smaller images).
func parseCIFAR(file string, b []byte, f *cifarFormat, x *Images) error {
	hdr := f.header
	rec := hdr + x.C*x.H*x.W
	if len(b)%rec != 0 {
		return fmt.Errorf("data: %s: %d bytes is not a multiple of the %d-byte record (truncated or not %s)", file, len(b), rec, f.name)
	}
	if len(b) == 0 {
		return fmt.Errorf("data: %s: empty, no %d-byte records", file, rec)
	}
	n := len(b) / rec
	for i := 0; i < n; i++ {
		r := b[i*rec : (i+1)*rec]
		fine := int(r[hdr-1])
		if fine >= f.classes {
			return fmt.Errorf("data: %s: record %d has label %d, outside [0, %d)", file, i, fine, f.classes)
		}
		if f.coarseClasses > 0 {
			if c := int(r[0]); c >= f.coarseClasses {
				return fmt.Errorf("data: %s: record %d has coarse label %d, outside [0, %d)", file, i, c, f.coarseClasses)
			}
			x.Coarse = append(x.Coarse, int64(r[0]))
		}
		x.Labels = append(x.Labels, int64(fine))
		x.Pixels = append(x.Pixels, r[hdr:]...)
	}
	x.N += n
	return nil
}

// cifarNames parses a class-name file: one name per line, blank lines ignored.
func cifarNames(file string, b []byte, classes int) ([]string, error) {
	var names []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	if len(names) != classes {
		return nil, fmt.Errorf("data: %s: %d class names, want %d", file, len(names), classes)
	}
	return names, nil
}

// maxTarMember bounds the size of an archive member readTarGzMembers reads (CIFAR-100's
// train.bin, the largest, is 153,700,000 bytes), so that a member declaring terabytes is
// an error before it is read.
const maxTarMember = 1 << 30

// readTarGzMembers streams a .tar.gz archive and returns the regular members whose base
// names are in wanted, keyed by base name.
func readTarGzMembers(archive string, wanted []string) (map[string][]byte, error) {
	want := map[string]bool{}
	for _, w := range wanted {
		want[w] = true
	}
	f, err := os.Open(archive)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("data: %s: not a gzip archive: %w", archive, err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		} else if err != nil {
			return nil, fmt.Errorf("data: %s: corrupt tar.gz archive: %w", archive, err)
		}
		base := path.Base(h.Name)
		if h.Typeflag != tar.TypeReg || !want[base] {
			continue
		}
		if _, dup := files[base]; dup {
			return nil, fmt.Errorf("data: %s: two members named %s", archive, base)
		}
		for k := range h.PAXRecords {
			// a GNU sparse member reads as h.Size bytes, mostly holes, from a few bytes
			if strings.HasPrefix(k, "GNU.sparse.") {
				return nil, fmt.Errorf("data: %s:%s: sparse archive member (not a dataset file)", archive, base)
			}
		}
		if h.Size > maxTarMember {
			return nil, fmt.Errorf("data: %s:%s: member declares %d bytes, over the %d a dataset file may have", archive, base, h.Size, maxTarMember)
		}
		// io.ReadAll grows with the bytes actually read, not the declared h.Size.
		if files[base], err = io.ReadAll(tr); err != nil {
			return nil, fmt.Errorf("data: %s:%s: truncated archive member: %w", archive, base, err)
		}
	}
}
