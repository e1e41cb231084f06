package data

// Fuzz targets for the parsers that read whole datasets: LEAF JSON, FedTP's plain-text
// client folders, MedMNIST's .npz, CIFAR's .tar.gz, image folders and RSNA Pneumonia's
// label CSV (FuzzReadIDX, FuzzReadNpy and FuzzCIFARRecords cover the single-file
// formats, package dicom's FuzzDICOM the DICOM files). Each writes its input into a
// temporary folder in the format's layout, opens it as the loaders do and checks that
// it either fails with an error naming the file or folder, or yields a set that passes
// Validate and the format's own invariants. scripts/fuzz.sh runs them all briefly.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// errNames fails t unless err names one of the paths.
func errNames(t *testing.T, err error, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if strings.Contains(err.Error(), p) {
			return
		}
	}
	t.Fatalf("error does not name %v: %v", paths, err)
}

// checkText checks a loaded text dataset's invariants: clients with unique IDs, one
// sequence length for all, whole sequences of tokens in the vocabulary.
func checkText(t *testing.T, txt *Text) {
	t.Helper()
	if txt.Vocab != Printable || len(txt.Clients) == 0 {
		t.Fatalf("vocabulary of %d characters, %d clients", len(txt.Vocab), len(txt.Clients))
	}
	l := txt.Clients[0].Train.Len
	ids := map[string]bool{}
	for _, c := range txt.Clients {
		if ids[c.ID] {
			t.Fatalf("client %q twice", c.ID)
		}
		ids[c.ID] = true
		for _, s := range []Sequences{c.Train, c.Test} {
			if s.Len != l || l <= 0 || len(s.Tokens)%(l+1) != 0 {
				t.Fatalf("client %q: length %d (want %d) with %d tokens", c.ID, s.Len, l, len(s.Tokens))
			}
			for _, tok := range s.Tokens {
				if tok < 0 || tok >= int64(len(txt.Vocab)) {
					t.Fatalf("client %q: token %d outside the vocabulary", c.ID, tok)
				}
			}
		}
	}
}

// FuzzLEAF opens arbitrary train and test files as LEAF JSON (OpenText's LEAF layout).
func FuzzLEAF(f *testing.F) {
	ok := leafJSON(f, []string{"A", "B"}, map[string]leafUser{
		"A": {[]string{"abc", "bcd"}, []string{"d", "e"}},
		"B": {[]string{"xyz"}, []string{"!"}},
	})
	f.Add(ok, ok)
	f.Add(ok, leafJSON(f, []string{"B", "C"}, map[string]leafUser{"B": {[]string{"q\n\t"}, []string{" "}}, "C": {}}))
	f.Add(ok, []byte(`{"users": ["A"], "num_samples": [0], "user_data": {"A": {"x": [], "y": []}}}`))
	f.Add([]byte(`{"users": ["A", "A"], "num_samples": [1, 1], "user_data": {"A": {"x": ["ab"], "y": ["c"]}}}`), ok)
	f.Add([]byte(`{"users": ["A"], "num_samples": [1], "user_data": {"A": {"x": ["é"], "y": ["c"]}}}`), ok)
	f.Add([]byte(`{"users": ["A"], "num_samples": [1], "user_data": {"A": {"x": [""], "y": ["c"]}}}`), ok)
	f.Add([]byte(`{"users": null, "num_samples": [-1], "user_data": 3}`), ok)
	f.Add([]byte(`[`), []byte(``))
	f.Fuzz(func(t *testing.T, train, test []byte) {
		dir := t.TempDir()
		trainPath := putFile(t, dir, "train/all_data_niid_0_keep_0_train_9.json", train)
		testPath := putFile(t, dir, "test/all_data_niid_0_keep_0_test_9.json", test)
		txt, err := OpenText("shakespeare:"+dir, 0)
		if err != nil {
			errNames(t, err, trainPath, testPath)
			return
		}
		checkText(t, txt)
	})
}

// plainTree writes FedTP's plain-text layout from spec: records separated by 0x00, each
// "name 0x01 train-text 0x01 test-text" (a record without test text writes no test.txt).
// Names are reduced to [A-Za-z0-9_-]. It returns the folder.
func plainTree(t *testing.T, spec []byte) string {
	dir := t.TempDir()
	for _, rec := range bytes.Split(spec, []byte{0}) {
		fields := bytes.SplitN(rec, []byte{1}, 3)
		name := strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return r
			}
			return -1
		}, string(fields[0]))
		if name == "" || len(name) > 64 {
			continue
		}
		if len(fields) > 1 {
			putFile(t, dir, name+"/train.txt", fields[1])
		}
		if len(fields) > 2 {
			putFile(t, dir, name+"/test.txt", fields[2])
		}
	}
	return dir
}

// FuzzPlainText opens arbitrary client folders in FedTP's plain-text layout.
func FuzzPlainText(f *testing.F) {
	f.Add([]byte("ROMEO\x01But soft! What light\x01through yonder\x00JULIET\x01O Romeo, Romeo\x01wherefore"), uint8(4))
	f.Add([]byte("A\x01abc\x01de\x00B\x01abcdef\x01abcdef"), uint8(2))
	f.Add([]byte("A\x01abc\x01de"), uint8(5))                   // too short: no client left
	f.Add([]byte("A\x01caf\xc3\xa9 au lait\x01noir"), uint8(2)) // outside the vocabulary
	f.Add([]byte("A\x01only train"), uint8(2))                  // no test.txt
	f.Add([]byte("A\x01abc\x01abc"), uint8(0))
	f.Fuzz(func(t *testing.T, spec []byte, seqLen uint8) {
		dir := plainTree(t, spec)
		l := int(seqLen % 16)
		txt, err := OpenText("shakespeare:"+dir, l)
		if err != nil {
			errNames(t, err, dir)
			return
		}
		checkText(t, txt)
		if !slices.IsSortedFunc(txt.Clients, func(a, b TextClient) int { return strings.Compare(a.ID, b.ID) }) {
			t.Fatal("clients not in name order")
		}
		for _, c := range txt.Clients {
			for _, part := range []struct {
				file string
				seq  Sequences
			}{{"train.txt", c.Train}, {"test.txt", c.Test}} {
				text, err := os.ReadFile(filepath.Join(dir, c.ID, part.file))
				if err != nil {
					t.Fatal(err)
				}
				// every window of l+1 characters, in order
				want := []int64{}
				for i := 0; i+l+1 <= len(text); i++ {
					want = append(want, printableTokens(string(text[i:i+l+1]))...)
				}
				if c.Train.Len != l || !slices.Equal(part.seq.Tokens, want) {
					t.Fatalf("client %q %s: length %d, %d tokens, want the %d windows of %q", c.ID, part.file, part.seq.Len, len(part.seq.Tokens), len(text)-l, text)
				}
			}
		}
	})
}

// npzSeparator separates the members in FuzzNpz's structured input.
var npzSeparator = []byte("\xff\xfe")

// npzMemberNames are the members FuzzNpz's structured input fills, in order.
var npzMemberNames = []string{"train_images.npy", "train_labels.npy", "test_images.npy", "test_labels.npy", "val_images.npy", "val_labels.npy"}

// FuzzNpz opens arbitrary MedMNIST .npz archives. With structured set the input is not
// the archive but its members (npzMemberNames in order, separated by npzSeparator),
// zipped by the target (deflated when deflate is set, else stored), so that the fuzzer
// can reach the .npy parsing inside an archive without forging checksums.
func FuzzNpz(f *testing.F) {
	m := medMNISTMembers()
	var parts [][]byte
	for _, n := range npzMemberNames {
		parts = append(parts, m[n])
	}
	f.Add(bytes.Join(parts, npzSeparator), true, false)
	f.Add(bytes.Join(parts, npzSeparator), true, true)
	f.Add(bytes.Join(parts[:4], npzSeparator), true, false) // no val part
	f.Add(npzBytes(f, m), false, false)
	f.Add(npzBytes(f, m)[:200], false, false)
	f.Add(zipBomb(f, 1<<40), false, false)
	f.Add(bytes.Join([][]byte{
		npyBytes(1, "|u1", false, []int{2, 1, 2, 3}, seqBytes(12, 0)), npyBytes(1, "|u1", false, []int{2}, []byte{1, 2}),
		npyBytes(1, "|u1", false, []int{1, 2, 1, 3}, seqBytes(6, 0)), npyBytes(1, "|u1", false, []int{1}, []byte{3}),
	}, npzSeparator), true, false)
	f.Add(bytes.Join([][]byte{
		npyBytes(1, "|u1", false, []int{0, 2, 2}, nil), npyBytes(1, "|u1", false, []int{0}, nil),
	}, npzSeparator), true, true)
	f.Fuzz(func(t *testing.T, b []byte, structured, deflate bool) {
		if structured {
			members := bytes.Split(b, npzSeparator)
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			for i, mb := range members[:min(len(members), len(npzMemberNames))] {
				method := zip.Store
				if deflate {
					method = zip.Deflate
				}
				w, err := zw.CreateHeader(&zip.FileHeader{Name: npzMemberNames[i], Method: method})
				if err != nil {
					t.Fatal(err)
				}
				w.Write(mb)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			b = buf.Bytes()
		}
		p := putFile(t, t.TempDir(), "fuzz.npz", b)
		sp, err := LoadMedMNIST("fuzz", p, 11)
		if err != nil {
			errNames(t, err, p)
			return
		}
		if err := sp.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, x := range []*Images{sp.Train, sp.Test} {
			if x.N == 0 || (x.C != 1 && x.C != 3) || !strings.Contains(x.Source, p) {
				t.Fatalf("%s: %d images of %d channels from %q", x.Name, x.N, x.C, x.Source)
			}
		}
	})
}

// zipBomb returns an .npz whose train_images.npy member declares size uncompressed
// bytes (and a header to match) but holds a few deflated bytes.
func zipBomb(t testing.TB, size uint64) []byte {
	hdr := npyBytes(1, "|u1", false, []int{int(size) - 128}, nil)
	var deflated bytes.Buffer
	zw := zip.NewWriter(&deflated)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "x", Method: zip.Deflate})
	w.Write(hdr)
	zw.Close()
	// take the deflated stream of the member written above: it starts after the local
	// header (30 bytes and the name) and ends at the data descriptor
	r, err := zip.NewReader(bytes.NewReader(deflated.Bytes()), int64(deflated.Len()))
	if err != nil {
		t.Fatal(err)
	}
	off, err := r.File[0].DataOffset()
	if err != nil {
		t.Fatal(err)
	}
	raw := deflated.Bytes()[off : off+int64(r.File[0].CompressedSize64)]
	var buf bytes.Buffer
	zw = zip.NewWriter(&buf)
	w, err = zw.CreateRaw(&zip.FileHeader{Name: "train_images.npy", Method: zip.Deflate,
		CompressedSize64: uint64(len(raw)), UncompressedSize64: size, CRC32: 1})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tinyCIFAR returns CIFAR-10's or -100's format with 1×1×2 images.
func tinyCIFAR(hundred bool) *cifarFormat {
	f := cifar10Format
	if hundred {
		f = cifar100Format
	}
	f.c, f.h, f.w = 1, 1, 2
	return &f
}

// tarBytes builds an uncompressed tar archive of the given members, in the given order.
func tarBytes(t testing.TB, members ...[2]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range members {
		if err := tw.WriteHeader(&tar.Header{Name: m[0], Mode: 0o644, Size: int64(len(m[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(m[1]))
	}
	tw.Close()
	return buf.Bytes()
}

// FuzzCIFARArchive opens arbitrary .tar.gz archives as CIFAR-10 or -100 with 1×1×2
// images (tinyCIFAR). Unless raw is set, the input is the tar archive and the target
// gzips it, so that the fuzzer reaches the tar and record parsing past the gzip checksum.
func FuzzCIFARArchive(f *testing.F) {
	batches := [][2]string{{"cifar-10-batches-bin/readme.html", "<html>"}}
	for _, n := range cifar10Format.train {
		batches = append(batches, [2]string{"cifar-10-batches-bin/" + n, "\x03\x01\x02\x09\x03\x04"})
	}
	test := [2]string{"cifar-10-batches-bin/test_batch.bin", "\x00\xff\xfe"}
	meta := [2]string{"cifar-10-batches-bin/batches.meta.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"}
	f.Add(tarBytes(f, append(slices.Clone(batches), test, meta)...), false, false)
	f.Add(tarBytes(f, append(slices.Clone(batches), test)...), false, false)
	f.Add(tarBytes(f, append(slices.Clone(batches), test, test)...), false, false)             // a member twice
	f.Add(tarBytes(f, append(slices.Clone(batches), [2]string{test[0], ""})...), false, false) // empty test batch
	f.Add(gzipBytes(tarBytes(f, append(slices.Clone(batches), test)...)), true, false)
	f.Add(tarBytes(f, [2]string{"cifar-100-binary/train.bin", "\x13\x63\x01\x02\x00\x05\x06\x07"}, [2]string{"cifar-100-binary/test.bin", "\x01\x02\x03\x04"}), false, true)
	f.Add(tarBytes(f, [2]string{"train.bin", "\x14\x05\x01\x02"}, [2]string{"test.bin", "\x01\x02\x03\x04"}), false, true)
	f.Add(sparseTar("cifar-10-batches-bin/test_batch.bin", 1<<20), false, false)
	f.Add([]byte("not gzip"), true, false)
	f.Fuzz(func(t *testing.T, b []byte, raw, hundred bool) {
		if !raw {
			b = gzipBytes(b)
		}
		p := putFile(t, t.TempDir(), "fuzz.tar.gz", b)
		format := tinyCIFAR(hundred)
		sp, err := loadCIFAR(p, format)
		if err != nil {
			errNames(t, err, p)
			return
		}
		if err := sp.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, x := range []*Images{sp.Train, sp.Test} {
			if x.N == 0 || x.C != 1 || x.H != 1 || x.W != 2 || x.Classes != format.classes || (hundred != (x.Coarse != nil)) {
				t.Fatalf("%s: %d images of %d×%d×%d, %d classes", x.Name, x.N, x.C, x.H, x.W, x.Classes)
			}
		}
	})
}

// imageSeeds are small valid image files: greyscale, RGB, RGBA and paletted PNG, and a
// JPEG.
func imageSeeds(t testing.TB) [][]byte {
	rgb := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for i := range rgb.Pix {
		rgb.Pix[i] = uint8(40 * i)
	}
	nrgba := image.NewNRGBA(image.Rect(0, 0, 1, 2))
	copy(nrgba.Pix, []uint8{10, 20, 30, 40, 50, 60, 70, 0})
	pal := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.RGBA{200, 10, 10, 255}})
	pal.Pix[1] = 1
	grey16 := image.NewGray16(image.Rect(0, 0, 2, 1))
	grey16.Pix = []uint8{1, 2, 255, 254}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, rgb, nil); err != nil {
		t.Fatal(err)
	}
	return [][]byte{pngBytes(t, greyImage(2, 2, 0, 100, 200, 40)), pngBytes(t, rgb), pngBytes(t, nrgba),
		pngBytes(t, pal), pngBytes(t, grey16), jpg.Bytes()}
}

// FuzzDecodeImage decodes arbitrary bytes as an image file of a folder dataset, in RGB
// and in grey.
func FuzzDecodeImage(f *testing.F) {
	for _, b := range imageSeeds(f) {
		f.Add(b, uint8(2))
	}
	f.Add(hugePNG(f, 1<<20, 1<<20), uint8(1))
	f.Add(hugePNG(f, 0, 5), uint8(1))
	f.Add([]byte("\xff\xd8\xff"), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, size uint8) {
		s := int(size%5) + 1
		// a small pixel bound keeps each run fast; loading uses maxImagePixels
		pix, err := decodeImageRGB("fuzz.img", b, s, 1<<16)
		if err != nil {
			errNames(t, err, "fuzz.img")
		} else if len(pix) != 3*s*s {
			t.Fatalf("%d pixel bytes, want %d", len(pix), 3*s*s)
		}
		// the chest X-ray loaders' grey path decodes the same way
		grey, gerr := decodeImageGrey("fuzz.img", b, s, 1<<16)
		if (gerr == nil) != (err == nil) {
			t.Fatalf("RGB error %v, grey error %v", err, gerr)
		}
		if gerr == nil && len(grey) != s*s {
			t.Fatalf("%d grey pixel bytes, want %d", len(grey), s*s)
		}
	})
}

// FuzzImageFolder opens arbitrary image-folder trees: spec picks files three bytes at
// a time (a folder from imageDirs, a name from imageNames, content from imageSeeds, or
// blob itself); with domains set the tree is a domains dataset
// (root/<domain>/<class>/<image>), else an image folder (root/<class>/<image>).
func FuzzImageFolder(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2, 2, 5}, []byte("blob"), false)
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2, 0, 6}, []byte("blob"), false)   // an undecodable image
	f.Add([]byte{0, 4, 0, 2, 3, 1}, []byte{}, false)                  // hidden and non-image files only
	f.Add([]byte{0, 0, 0, 3, 0, 1, 5, 1, 2, 6, 0, 3}, []byte{}, true) // two domains, same classes
	f.Add([]byte{0, 0, 0, 6, 0, 1}, []byte{}, true)                   // two domains, other classes
	f.Fuzz(func(t *testing.T, spec, blob []byte, domains bool) {
		root := t.TempDir()
		seeds := append(imageSeeds(t), blob)
		made := map[string]bool{} // image files made, by path
		for i := 0; i+3 <= len(spec); i += 3 {
			dir := imageDirs[int(spec[i])%len(imageDirs)]
			if !domains {
				dir = filepath.Base(dir)
			}
			name := imageNames[int(spec[i+1])%len(imageNames)]
			p := filepath.Join(root, dir, name)
			if made[p] || made[filepath.Dir(p)] {
				continue // a folder and a file of one name
			}
			if strings.HasSuffix(name, "/") {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				continue
			}
			putFile(t, root, filepath.Join(dir, name), seeds[int(spec[i+2])%len(seeds)])
			made[p] = true
		}
		if domains {
			sp, err := LoadDomains("fuzz", root, 2) // Open's domains: at 2×2 pixels, not 224×224
			if err != nil {
				errNames(t, err, root)
				return
			}
			if err := sp.Validate(); err != nil {
				t.Fatal(err)
			}
			x := sp.Train
			if len(x.DomainNames) == 0 || !slices.IsSorted(x.DomainNames) || x.N == 0 || x.H != 2 || sp.Test.N != 0 {
				t.Fatalf("domains %v, %d images", x.DomainNames, x.N)
			}
			return
		}
		x, err := LoadImageFolder("fuzz", root, 2)
		if err != nil {
			errNames(t, err, root)
			return
		}
		if err := x.Validate(); err != nil {
			t.Fatal(err)
		}
		if x.N == 0 || x.C != 3 || x.H != 2 || x.W != 2 || !slices.IsSorted(x.ClassNames) {
			t.Fatalf("%d images of %d×%d×%d, classes %v", x.N, x.C, x.H, x.W, x.ClassNames)
		}
		n := 0
		for p := range made {
			cls, base := filepath.Base(filepath.Dir(p)), filepath.Base(p)
			if slices.Contains(x.ClassNames, cls) && !strings.HasPrefix(base, ".") && slices.Contains([]string{".png", ".jpg", ".jpeg"}, strings.ToLower(filepath.Ext(base))) {
				n++
			}
		}
		if n != x.N {
			t.Fatalf("%d images loaded, %d made", x.N, n)
		}
	})
}

// imageDirs and imageNames are the folders and file names FuzzImageFolder draws from;
// a name ending in / is made as a folder.
var (
	imageDirs  = []string{"d0/cat", "d0/dog", "d0/.git", "d1/cat", "d1/dog", ".d2/cat", "d 3/cow"}
	imageNames = []string{"1.png", "2.JPG", "3.jpeg", "notes.txt", ".hidden.png", "dir.png/", "x.Png", "4"}
)

// FuzzRSNALabels parses arbitrary bytes as RSNA Pneumonia's label CSV: an error naming
// the file, or unique patients with valid IDs and a label each.
func FuzzRSNALabels(f *testing.F) {
	f.Add(rsnaCSV("p0,,,,,0", "p1,1,2,3,4,1", "p1,5,6,7,8,1", "p2,,,,,0"))
	f.Add([]byte("\ufeffpatientId,x,y,width,height,Target\r\na,,,,,1\r\n"))
	f.Add([]byte("Target,patientId\n1,a\n0,a\n"))
	f.Add(rsnaCSV("../x,,,,,0"))
	f.Add(rsnaCSV(`"p""0",,,,,0`, "p1,,,,,2"))
	f.Add([]byte("patientId,Target\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, pos, err := parseRSNALabels("labels.csv", b)
		if err != nil {
			errNames(t, err, "labels.csv")
			return
		}
		if len(ids) == 0 || len(pos) != len(ids) {
			t.Fatalf("%d patients, %d labels", len(ids), len(pos))
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] || !validPatientID(id) {
				t.Fatalf("patient %q twice or not a file name", id)
			}
			seen[id] = true
		}
		test := rsnaTestSplit(ids, pos)
		if len(test) != len(ids) {
			t.Fatalf("%d test marks for %d patients", len(test), len(ids))
		}
	})
}
