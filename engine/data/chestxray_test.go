package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"pfl/engine/data/dicom"
)

// dicomFile writes a DICOM Part 10 file of rows×cols 8-bit MONOCHROME2 pixels, explicit
// VR little endian (or the given transfer syntax), with the identity window (center
// 128, width 256: value v displays as v) so that tests can predict the pixels.
func dicomFile(rows, cols int, pix []uint8, syntax string) []byte {
	var b bytes.Buffer
	el := func(group, elem uint16, vr string, v []byte) {
		_ = binary.Write(&b, binary.LittleEndian, [2]uint16{group, elem})
		b.WriteString(vr)
		if vr == "OB" || vr == "OW" {
			_ = binary.Write(&b, binary.LittleEndian, uint16(0))
			_ = binary.Write(&b, binary.LittleEndian, uint32(len(v)))
		} else {
			_ = binary.Write(&b, binary.LittleEndian, uint16(len(v)))
		}
		b.Write(v)
	}
	us := func(v int) []byte { return binary.LittleEndian.AppendUint16(nil, uint16(v)) }
	even := func(s string) []byte {
		if len(s)%2 == 1 {
			s += "\x00"
		}
		return []byte(s)
	}
	b.Write(make([]byte, 128))
	b.WriteString("DICM")
	el(0x0002, 0x0010, "UI", even(syntax))
	el(0x0028, 0x0002, "US", us(1))
	el(0x0028, 0x0004, "CS", []byte("MONOCHROME2 "))
	el(0x0028, 0x0010, "US", us(rows))
	el(0x0028, 0x0011, "US", us(cols))
	el(0x0028, 0x0100, "US", us(8))
	el(0x0028, 0x1050, "DS", []byte("128 "))
	el(0x0028, 0x1051, "DS", []byte("256 "))
	el(0x7FE0, 0x0010, "OB", pix)
	return b.Bytes()
}

// uniform returns n copies of v.
func uniform(n int, v uint8) []uint8 { return slices.Repeat([]uint8{v}, n) }

func jpegBytes(t testing.TB, img image.Image) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rsnaCSV is a label file in the challenge's layout: a header, then per patient its
// rows (a box per opacity; one row with an empty box for a patient without).
func rsnaCSV(rows ...string) []byte {
	return []byte("patientId,x,y,width,height,Target\n" + strings.Join(rows, "\n") + "\n")
}

func TestChestSpec(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		side      int
	}{{"/data/rsna", "/data/rsna", 224}, {"/data/rsna:64", "/data/rsna", 64}, {"a:b", "a:b", 224},
		{"x:64:32", "x:64", 32}, {"x:", "x:", 224}, {"x:+5", "x:+5", 224}} {
		dir, side, err := chestSpec("rsna", tc.path)
		if err != nil || dir != tc.dir || side != tc.side {
			t.Errorf("chestSpec(%q) = %q, %d, %v; want %q, %d", tc.path, dir, side, err, tc.dir, tc.side)
		}
	}
	for _, p := range []string{"d:0", "d:1025"} {
		if _, _, err := chestSpec("rsna", p); err == nil || !strings.Contains(err.Error(), "want 1 to 1024") {
			t.Errorf("chestSpec(%q): %v", p, err)
		}
	}
}

// rsnaTree writes an RSNA folder of ten patients: p0..p5 normal, p6..p9 positive (p6
// with two boxes, p7 with a Target 0 row before its box). Patient i's image is uniform
// grey 10·i+5: DICOM for the even ones, PNG or JPEG for the odd ones, and p2 also has a
// PNG of another grey, which the DICOM file takes precedence over.
func rsnaTree(t *testing.T) string {
	dir := t.TempDir()
	rows := []string{"p0,,,,,0", "p1,,,,,0", "p2,,,,,0", "p3,,,,,0", "p4,,,,,0", "p5,,,,,0",
		"p6,1,2,3,4,1", "p7,,,,,0", "p7,5,6,7,8,1", "p6,9,9,9,9,1", "p8,1,1,1,1,1", "p9,2,2,2,2,1"}
	putFile(t, dir, RSNALabelsFile, rsnaCSV(rows...))
	for i := range 10 {
		v := uint8(10*i + 5)
		name := fmt.Sprintf("%s/p%d", RSNAImagesDir, i)
		switch {
		case i%2 == 0:
			putFile(t, dir, name+".dcm", dicomFile(8, 6, uniform(48, v), dicom.ExplicitVRLittleEndian))
		case i%4 == 1:
			putFile(t, dir, name+".png", pngBytes(t, greyImage(5, 7, uniform(35, v)...)))
		default:
			putFile(t, dir, name+".JPG", jpegBytes(t, greyImage(16, 16, uniform(256, v)...)))
		}
	}
	putFile(t, dir, RSNAImagesDir+"/p2.png", pngBytes(t, greyImage(5, 7, uniform(35, 250)...)))
	putFile(t, dir, RSNAImagesDir+"/p99.dcm", []byte("not in the CSV, never read"))
	putFile(t, dir, RSNAImagesDir+"/notes.txt", []byte("skipped"))
	return dir
}

func TestOpenRSNA(t *testing.T) {
	dir := rsnaTree(t)
	sp, err := Open("rsna:" + dir + ":4")
	if err != nil {
		t.Fatal(err)
	}
	tr, te := sp.Train, sp.Test
	if tr.N+te.N != 10 || tr.C != 1 || tr.H != 4 || tr.W != 4 || tr.Classes != 2 || !slices.Equal(tr.ClassNames, RSNAClasses) || tr.Coarse != nil {
		t.Fatalf("train %d + test %d images of %s, %d classes %v", tr.N, te.N, tr.shape(), tr.Classes, tr.ClassNames)
	}
	// the split, worked out here on its own: per class, round(20%) of the patients by
	// their SHA-256 in hex (the same order as the bytes')
	byHash := func(ids []string) []string {
		s := slices.Clone(ids)
		sort.Slice(s, func(a, b int) bool {
			ha, hb := sha256.Sum256([]byte(s[a])), sha256.Sum256([]byte(s[b]))
			return hex.EncodeToString(ha[:]) < hex.EncodeToString(hb[:])
		})
		return s
	}
	testIDs := append(byHash([]string{"p0", "p1", "p2", "p3", "p4", "p5"})[:1], byHash([]string{"p6", "p7", "p8", "p9"})[:1]...)
	// each image is uniform, so its first pixel names its patient: 10·i+5
	patient := func(x *Images, k int) int { return (int(x.Pixels[k*16]) - 5) / 10 }
	var gotTest []string
	for k := range te.N {
		gotTest = append(gotTest, fmt.Sprintf("p%d", patient(te, k)))
	}
	if slices.Sort(testIDs); !slices.Equal(slices.Sorted(slices.Values(gotTest)), testIDs) {
		t.Fatalf("test patients %v, want %v", gotTest, testIDs)
	}
	for _, x := range []*Images{tr, te} {
		prev := -1
		for k := range x.N {
			i := patient(x, k)
			if i <= prev { // the order of first appearance in the CSV
				t.Errorf("%s: p%d after p%d", x.Name, i, prev)
			}
			prev = i
			if want := int64(boolInt(i >= 6)); x.Labels[k] != want {
				t.Errorf("%s image %d (p%d): label %d, want %d", x.Name, k, i, x.Labels[k], want)
			}
			px := x.Pixels[k*16 : (k+1)*16]
			v := uint8(10*i + 5)
			if i%4 == 3 { // a JPEG: a uniform grey survives quality 100 within a level
				if slices.ContainsFunc(px, func(p uint8) bool { return p < v-1 || p > v+1 }) {
					t.Errorf("p%d: pixels %v, want about %d", i, px, v)
				}
			} else if !slices.Equal(px, uniform(16, v)) {
				t.Errorf("p%d: pixels %v, want %d (the .dcm over the .png for p2)", i, px, v)
			}
		}
	}
	// the default side
	sp, err = Open("rsna:" + dir)
	if err != nil || sp.Train.H != ChestXRaySize || sp.Train.W != ChestXRaySize {
		t.Fatalf("default side: %v %v", sp, err)
	}
}

func TestRSNATestSplitIsStratified(t *testing.T) {
	var ids []string
	var pos []bool
	for i := range 1000 {
		ids = append(ids, fmt.Sprintf("%08x-id", i*7919))
		pos = append(pos, i%4 == 0) // 250 positive, 750 negative
	}
	test := rsnaTestSplit(ids, pos)
	var n [2]int
	for i, te := range test {
		if te {
			n[boolInt(pos[i])]++
		}
	}
	if n != [2]int{150, 50} {
		t.Fatalf("test patients per class %v, want [150 50]", n)
	}
	// independent of the order of the rows
	slices.Reverse(ids)
	slices.Reverse(pos)
	test2 := rsnaTestSplit(ids, pos)
	slices.Reverse(test2)
	if !slices.Equal(test, test2) {
		t.Fatal("the split depends on the order of the CSV")
	}
}

func TestOpenRSNAErrors(t *testing.T) {
	edit := func(edit func(t *testing.T, dir string)) func(t *testing.T) string {
		return func(t *testing.T) string {
			dir := rsnaTree(t)
			edit(t, dir)
			return dir
		}
	}
	cases := []struct {
		name string
		dir  func(t *testing.T) string
		want []string
	}{
		{"no labels", func(t *testing.T) string { return t.TempDir() }, []string{RSNALabelsFile, "no such file"}},
		{"empty labels", edit(func(t *testing.T, d string) { putFile(t, d, RSNALabelsFile, nil) }), []string{RSNALabelsFile, "empty"}},
		{"no rows", edit(func(t *testing.T, d string) { putFile(t, d, RSNALabelsFile, []byte("patientId,Target\n")) }), []string{"no patients"}},
		{"bad header", edit(func(t *testing.T, d string) { putFile(t, d, RSNALabelsFile, []byte("id,label\np0,0\n")) }), []string{"no patientId and Target columns"}},
		{"bad target", edit(func(t *testing.T, d string) { putFile(t, d, RSNALabelsFile, rsnaCSV("p0,,,,,0", "p1,,,,,2")) }), []string{RSNALabelsFile, "line 3", `Target "2"`}},
		{"path in id", edit(func(t *testing.T, d string) { putFile(t, d, RSNALabelsFile, rsnaCSV("../p0,,,,,0")) }), []string{"line 2", `patientId "../p0" is not a file name`}},
		{"ragged csv", edit(func(t *testing.T, d string) { putFile(t, d, RSNALabelsFile, rsnaCSV("p0,,,,,0", "p1,0")) }), []string{RSNALabelsFile, "wrong number of fields"}},
		{"missing image", edit(func(t *testing.T, d string) {
			putFile(t, d, RSNALabelsFile, rsnaCSV("p0,,,,,0", "q1,,,,,1", "q2,,,,,0"))
		}),
			[]string{RSNAImagesDir, "no image for 2 of the 3 patients", `"q1"`}},
		{"no image folder", func(t *testing.T) string {
			d := t.TempDir()
			putFile(t, d, RSNALabelsFile, rsnaCSV("p0,,,,,0"))
			return d
		}, []string{RSNAImagesDir, "no such file"}},
		{"corrupt dicom", edit(func(t *testing.T, d string) { putFile(t, d, RSNAImagesDir+"/p4.dcm", []byte("DICM")) }), []string{"p4.dcm", "not a DICOM Part 10 file"}},
		{"lossless dicom", edit(func(t *testing.T, d string) {
			putFile(t, d, RSNAImagesDir+"/p4.dcm", dicomFile(2, 2, uniform(4, 1), "1.2.840.10008.1.2.4.70"))
		}), []string{"p4.dcm", "JPEG lossless"}},
		{"corrupt png", edit(func(t *testing.T, d string) { putFile(t, d, RSNAImagesDir+"/p1.png", []byte("\x89PNG")) }), []string{"p1.png", "cannot decode"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open("rsna:" + tc.dir(t))
			if err == nil {
				t.Fatal("opened")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v\nwant one containing %q", err, w)
				}
			}
		})
	}
	if _, err := Open("rsna:" + filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Fatalf("missing folder: %v", err)
	}
	if _, err := Open("rsna"); err == nil || !strings.Contains(err.Error(), "rsna:<dir>") {
		t.Fatalf("no folder: %v", err)
	}
}

// kermanyTree writes chest_xray/{train,val,test}/{NORMAL,PNEUMONIA} under a temporary
// folder, one file per name, a uniform grey image whose value is the name's index·20+10
// (colour for names ending in .png, so the luma conversion is exercised), and returns
// the folder holding chest_xray.
func kermanyTree(t *testing.T, names ...string) string {
	dir := t.TempDir()
	for i, n := range names {
		v := uint8(20*i + 10)
		var b []byte
		if strings.HasSuffix(n, ".png") {
			rgb := image.NewRGBA(image.Rect(0, 0, 6, 6))
			for p := range 36 {
				rgb.Set(p%6, p/6, color.RGBA{v, v, v, 255})
			}
			b = pngBytes(t, rgb)
		} else {
			b = jpegBytes(t, greyImage(8, 8, uniform(64, v)...))
		}
		putFile(t, dir, "chest_xray/"+n, b)
	}
	return dir
}

var kermanyNames = []string{
	"train/NORMAL/IM-0115-0001.jpeg", "train/NORMAL/NORMAL2-IM-0001.jpeg",
	"train/PNEUMONIA/person1_bacteria_1.jpeg", "train/PNEUMONIA/person1_virus_6.jpeg", "train/PNEUMONIA/person2_bacteria_3.png",
	"val/NORMAL/NORMAL2-IM-1427-0001.jpeg", "val/PNEUMONIA/person1946_bacteria_4874.jpeg",
	"test/NORMAL/IM-0001-0001.jpeg", "test/PNEUMONIA/person100_bacteria_475.jpeg", "test/PNEUMONIA/person1_virus_11.jpeg",
}

func TestOpenKermany(t *testing.T) {
	dir := kermanyTree(t, kermanyNames...)
	for _, spec := range []string{"kermany:" + dir + ":4", "kermany:" + filepath.Join(dir, "chest_xray") + ":4"} {
		sp, err := Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		tr, te := sp.Train, sp.Test
		if tr.N != 7 || te.N != 3 || tr.C != 1 || tr.H != 4 || tr.Classes != 3 || tr.CoarseClasses != 2 || !slices.Equal(tr.ClassNames, KermanyClasses) {
			t.Fatalf("%s: %d + %d images of %s, %d classes %v, %d coarse", spec, tr.N, te.N, tr.shape(), tr.Classes, tr.ClassNames, tr.CoarseClasses)
		}
		// train: train/NORMAL, train/PNEUMONIA, then val's; sorted names in each folder
		if want := []int64{0, 0, 1, 2, 1, 0, 1}; !slices.Equal(tr.Labels, want) {
			t.Fatalf("train labels %v, want %v", tr.Labels, want)
		}
		if want := []int64{0, 0, 1, 1, 1, 0, 1}; !slices.Equal(tr.Coarse, want) {
			t.Fatalf("train coarse labels %v, want %v", tr.Coarse, want)
		}
		if !slices.Equal(te.Labels, []int64{0, 1, 2}) || !slices.Equal(te.Coarse, []int64{0, 1, 1}) {
			t.Fatalf("test labels %v, coarse %v", te.Labels, te.Coarse)
		}
		// pixels: file k of kermanyNames is uniform 20k+10 (PNG: grey through RGB and luma)
		for k := range tr.N {
			v := 20*k + 10
			for _, p := range tr.Pixels[k*16 : (k+1)*16] {
				if math.Abs(float64(p)-float64(v)) > 1 {
					t.Fatalf("train image %d: pixel %d, want %d", k, p, v)
				}
			}
		}
		if !strings.Contains(tr.Source, "train") || !strings.Contains(tr.Source, "val") {
			t.Fatalf("source %q", tr.Source)
		}
	}
	sp, err := Open("kermany-binary:" + dir + ":4")
	if err != nil {
		t.Fatal(err)
	}
	if tr := sp.Train; tr.Classes != 2 || tr.Coarse != nil || !slices.Equal(tr.Labels, []int64{0, 0, 1, 1, 1, 0, 1}) || !slices.Equal(tr.ClassNames, KermanyCoarseClasses) {
		t.Fatalf("binary: %d classes %v, labels %v, coarse %v", tr.Classes, tr.ClassNames, tr.Labels, tr.Coarse)
	}
	// without val
	dir = kermanyTree(t, slices.DeleteFunc(slices.Clone(kermanyNames), func(n string) bool { return strings.HasPrefix(n, "val/") })...)
	if sp, err := Open("kermany:" + dir + ":4"); err != nil || sp.Train.N != 5 {
		t.Fatalf("without val: %v", err)
	}
}

// TestChestXRayPartitions runs TransFed's partitions on the chest X-ray sets: the
// pathological split and the Dirichlet ("Beta") split on two classes, and the two-stage
// Pachinko split on Kermany's fine and coarse labels.
func TestChestXRayPartitions(t *testing.T) {
	var names []string
	for i := range 24 {
		names = append(names, fmt.Sprintf("train/NORMAL/IM-%04d.jpeg", i), fmt.Sprintf("train/PNEUMONIA/person%d_bacteria_%d.jpeg", i, i),
			fmt.Sprintf("train/PNEUMONIA/person%d_virus_%d.jpeg", i, i))
		if i < 8 {
			names = append(names, fmt.Sprintf("test/NORMAL/IM-%04d.jpeg", i), fmt.Sprintf("test/PNEUMONIA/person%d_virus_%d.jpeg", i, i))
		}
	}
	dir := kermanyTree(t, names...)
	fine, err := Open("kermany:" + dir + ":2")
	if err != nil {
		t.Fatal(err)
	}
	two, err := Open("kermany-binary:" + dir + ":2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sp  *Split
		cfg PartitionConfig
	}{
		{fine, PartitionConfig{Method: MethodPachinko, Clients: 4, Alpha: 0.4}},
		{fine, PartitionConfig{Method: MethodPachinko, Clients: 4, Alpha: 0.4, Convention: ConventionFedPerfix}},
		{two, PartitionConfig{Method: MethodPathological, Clients: 4, ClassesPerClient: 1}},
		{two, PartitionConfig{Method: MethodDirichlet, Clients: 4, Alpha: 0.3, MinSize: 1}},
	} {
		f, err := tc.sp.Partition(tc.cfg)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.sp.Train.Name, tc.cfg.Method, err)
		}
		if len(f.Part.Train) != 4 {
			t.Fatalf("%s: %d clients", tc.cfg.Method, len(f.Part.Train))
		}
		if tc.cfg.Method == MethodPathological {
			for j, p := range f.Part.Train {
				for _, i := range p {
					if f.Train.Labels[i] != f.Train.Labels[p[0]] {
						t.Fatalf("pathological, 1 class per client: client %d has two", j)
					}
				}
			}
		}
	}
}

func TestOpenKermanyErrors(t *testing.T) {
	cases := []struct {
		name  string
		files []string
		want  []string
	}{
		{"no train", []string{"test/NORMAL/a.jpeg"}, []string{"neither train/ nor chest_xray/train/"}},
		{"no test", []string{"train/NORMAL/a.jpeg", "train/PNEUMONIA/p_virus_1.jpeg"}, []string{"test", "no such file"}},
		{"half a val", []string{"train/NORMAL/a.jpeg", "train/PNEUMONIA/p_virus_1.jpeg", "val/NORMAL/b.jpeg", "test/NORMAL/c.jpeg", "test/PNEUMONIA/p_virus_2.jpeg"},
			[]string{"val", "PNEUMONIA", "no such file"}},
		{"unnamed pneumonia", []string{"train/NORMAL/a.jpeg", "train/PNEUMONIA/person3_4.jpeg", "test/NORMAL/c.jpeg", "test/PNEUMONIA/p_virus_2.jpeg"},
			[]string{"person3_4.jpeg", "bacteria or virus"}},
		{"both names", []string{"train/NORMAL/a.jpeg", "train/PNEUMONIA/bacteria_virus.jpeg", "test/NORMAL/c.jpeg", "test/PNEUMONIA/p_virus_2.jpeg"},
			[]string{"bacteria_virus.jpeg"}},
		{"stray folder", []string{"train/NORMAL/a.jpeg", "train/PNEUMONIA/p_virus_1.jpeg", "train/COVID/x.jpeg", "test/NORMAL/c.jpeg", "test/PNEUMONIA/p_virus_2.jpeg"},
			[]string{"train", `unexpected folder "COVID"`}},
		{"empty test", []string{"train/NORMAL/a.jpeg", "train/PNEUMONIA/p_virus_1.jpeg", "test/NORMAL/x.txt", "test/PNEUMONIA/y.txt"},
			[]string{"test", "holds no images"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open("kermany:" + kermanyTree(t, tc.files...) + ":2")
			if err == nil {
				t.Fatal("opened")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v\nwant one containing %q", err, w)
				}
			}
		})
	}
}

func TestImageToGrey(t *testing.T) {
	rgb := image.NewRGBA(image.Rect(0, 0, 3, 1))
	rgb.Set(0, 0, color.RGBA{255, 0, 0, 255})
	rgb.Set(1, 0, color.RGBA{0, 255, 0, 255})
	rgb.Set(2, 0, color.RGBA{10, 200, 30, 255})
	g16 := image.NewGray16(image.Rect(0, 0, 1, 1))
	g16.SetGray16(0, 0, color.Gray16{Y: 0xABCD})
	for _, tc := range []struct {
		img  image.Image
		want []uint8
	}{
		// PIL: Image.new("RGB", ...).convert("L"): (255,0,0) → 76, (0,255,0) → 150, (10,200,30) → 124
		{rgb, []uint8{76, 150, 124}},
		{g16, []uint8{0xAB}},
		{greyImage(2, 1, 7, 9), []uint8{7, 9}},
	} {
		got, h, w := imageToGrey(tc.img)
		if !slices.Equal(got, tc.want) || h*w != len(tc.want) {
			t.Errorf("%T: %v, want %v", tc.img, got, tc.want)
		}
	}
}
