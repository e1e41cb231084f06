package fetch

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain runs the tests without a mirror of the caller's: each test that wants one sets it.
func TestMain(m *testing.M) {
	os.Unsetenv(MirrorEnv)
	os.Exit(m.Run())
}

// twoFiles is a dataset of two files (as MNIST's four) at the server's paths /official/<name>.
func twoFiles(s *server, a, b []byte) Dataset {
	return Dataset{Name: "toy", Path: "b.gz", Files: []File{
		{Name: "a.gz", URLs: []string{s.URL + "/official/a.gz"}, MD5: md5hex(a), Size: int64(len(a))},
		{Name: "b.gz", URLs: []string{s.URL + "/official/b.gz"}, MD5: md5hex(b), Size: int64(len(b))},
	}}
}

// write writes b to path, making its folder.
func write(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGetFrom: --from takes a dataset's files from a local file, a folder (flat, or laid out
// as a data folder) or another address, checked against the catalog's checksum as a
// download is, without asking the official address; what it cannot give is refused before
// anything is written, naming what to give instead.
func TestGetFrom(t *testing.T) {
	s := newServer(t)
	a, _ := fixture(3000)
	b := bytes.Repeat([]byte("mnist"), 700)
	s.files["/copy/a.gz"], s.files["/copy/b.gz"], s.files["/one/other-name"] = a, b, a
	src := t.TempDir()
	flat := filepath.Join(src, "flat")
	write(t, filepath.Join(flat, "a.gz"), a)
	write(t, filepath.Join(flat, "b.gz"), b)
	write(t, filepath.Join(src, "datafolder", "toy", "a.gz"), a)
	write(t, filepath.Join(src, "datafolder", "toy", "b.gz"), b)
	single := write(t, filepath.Join(src, "download (1).bin"), a)
	damaged := write(t, filepath.Join(src, "damaged.bin"), append([]byte{a[0] ^ 1}, a[1:]...))
	big := write(t, filepath.Join(src, "big.bin"), append(a, 0))
	one := oneFile(s, "a.gz", md5hex(a))
	one.Files[0].Size = int64(len(a))
	one.Files[0].URLs = []string{s.URL + "/official/a.gz"}
	manual := Dataset{Name: "toy", Manual: "by hand", Files: []File{{Name: "x.zip", Unpack: true}}}
	zipped := write(t, filepath.Join(src, "x.zip"), zipOf(t, map[string]string{"labels.csv": "id"}))
	for _, c := range []struct {
		name  string
		d     Dataset
		from  string
		err   []string // "": fetched
		from0 string   // the record's From of the first file
	}{
		{name: "a file of another name", d: one, from: single, from0: single},
		{name: "a file:// address", d: one, from: "file://" + single, from0: single},
		{name: "a folder holding the files", d: twoFiles(s, a, b), from: flat, from0: filepath.Join(flat, "a.gz")},
		{name: "another machine's data folder", d: twoFiles(s, a, b), from: filepath.Join(src, "datafolder"), from0: filepath.Join(src, "datafolder", "toy", "a.gz")},
		{name: "a base address", d: twoFiles(s, a, b), from: s.URL + "/copy", from0: s.URL + "/copy/a.gz"},
		{name: "a file's address", d: one, from: s.URL + "/one/other-name", from0: s.URL + "/one/other-name"},
		{name: "a manual dataset's archive", d: manual, from: zipped, from0: zipped},
		{name: "a damaged copy", d: one, from: damaged, err: []string{"not the published " + md5hex(a), damaged, "removed"}},
		{name: "a copy longer than the file", d: one, from: big, err: []string{"3001 bytes, more than the 3000 bytes a.gz has"}},
		{name: "one file of two", d: twoFiles(s, a, b), from: single, err: []string{"toy has 2 (a.gz, b.gz): give the folder holding them"}},
		{name: "a folder without them", d: twoFiles(s, a, b), from: src, err: []string{filepath.Join(src, "toy", "a.gz") + ": no such file", filepath.Join(src, "a.gz") + ": no such file"}},
		{name: "nothing there", d: one, from: filepath.Join(src, "none"), err: []string{"no such file or folder"}},
		{name: "a device", d: one, from: "/dev/zero", err: []string{"/dev/zero is not a regular file"}},
		{name: "a dataset made by scripts", d: Dataset{Name: "toy", Manual: "steps"}, from: flat, err: []string{"no file to take", "prints the steps"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			rec, err := Get(context.Background(), c.d, Options{Root: root, From: c.from})
			if c.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := Fetched(root, c.d); !ok || rec.Files[0].From != c.from0 {
					t.Fatalf("fetched %v, record %+v; want it from %s", ok, rec, c.from0)
				}
				if c.d.Files[0].MD5 != "" && rec.Files[0].Checked != "published MD5" {
					t.Errorf("checked %q; want the published MD5", rec.Files[0].Checked)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to contain %q", err, w)
				}
			}
			if l := leftovers(t, filepath.Join(root, "toy")); len(l) != 0 {
				t.Errorf("a refused copy left %v", l)
			}
		})
	}
	if got := s.requested("/official/"); got != 0 {
		t.Errorf("%d requests to the official addresses; --from asks none", got)
	}
}

// TestMirrorIsTriedFirst: a mirror (a folder, or a base address; laid out as a data folder
// or flat) gives a file before the official address is asked; a mirror without it falls
// back to the official address; a file fetched by hand that the mirror lacks gets its steps.
func TestMirrorIsTriedFirst(t *testing.T) {
	s := newServer(t)
	a, _ := fixture(2500)
	b := bytes.Repeat([]byte("idx"), 900)
	s.files["/official/a.gz"], s.files["/official/b.gz"] = a, b
	s.files["/mirror/toy/a.gz"], s.files["/mirror/toy/b.gz"] = a, b
	folder := t.TempDir()
	write(t, filepath.Join(folder, "a.gz"), a) // flat: the files alone
	write(t, filepath.Join(folder, "b.gz"), b)
	for _, c := range []struct {
		name, mirror string
		official     int    // requests to the official addresses
		from0        string // the record's From of the first file
	}{
		{"a folder", folder, 0, filepath.Join(folder, "a.gz")},
		{"an address", s.URL + "/mirror/", 0, s.URL + "/mirror/toy/a.gz"},
		{"a mirror without the files", t.TempDir(), 2, s.URL + "/official/a.gz"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(MirrorEnv, c.mirror)
			root := t.TempDir()
			before := s.requested("/official/")
			rec, err := Get(context.Background(), twoFiles(s, a, b), Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Files[0].From != c.from0 {
				t.Errorf("from %q; want %q", rec.Files[0].From, c.from0)
			}
			if got := s.requested("/official/") - before; got != c.official {
				t.Errorf("%d requests to the official addresses; want %d", got, c.official)
			}
		})
	}
	t.Setenv(MirrorEnv, folder)
	manual := Dataset{Name: "toy", Manual: "put it at {dir}/x.zip", Files: []File{{Name: "x.zip", Unpack: true}}}
	if _, err := Get(context.Background(), manual, Options{Root: t.TempDir()}); !errors.As(err, new(*ManualError)) {
		t.Fatalf("%v; want the steps", err)
	}
}

// TestOfflineSaysWhereToPutTheFiles: when no address answers (no network: here a closed
// port), the error names the exact path of every file still missing under the dataset's
// folder with its size and checksum, and --from and the mirror variable; nothing is left.
func TestOfflineSaysWhereToPutTheFiles(t *testing.T) {
	a, b := []byte("first file"), []byte("second file")
	closed := "http://127.0.0.1:1/"
	d := Dataset{Name: "toy", Path: "b.gz", Files: []File{
		{Name: "a.gz", URLs: []string{closed + "a.gz"}, MD5: md5hex(a), Size: int64(len(a))},
		{Name: "b.gz", URLs: []string{closed + "b.gz"}, MD5: md5hex(b), Size: int64(len(b))},
	}}
	root := t.TempDir()
	dir := filepath.Join(root, "toy")
	for _, c := range []struct {
		name    string
		placed  bool // a.gz is in place already
		want    []string
		notWant string
	}{
		{"nothing placed", false, []string{filepath.Join(dir, "a.gz") + "  (10 bytes, MD5 " + md5hex(a) + ")",
			filepath.Join(dir, "b.gz") + "  (11 bytes, MD5 " + md5hex(b) + ")", "copy the files", "run pfl data get toy again",
			"pfl data get toy --from FILE|FOLDER|URL", MirrorEnv, closed + "a.gz"}, ""},
		{"the first placed", true, []string{filepath.Join(dir, "b.gz") + "  (11 bytes, MD5 " + md5hex(b) + ")", "copy the file "}, filepath.Join(dir, "a.gz")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.placed {
				write(t, filepath.Join(dir, "a.gz"), a)
			}
			_, err := Get(context.Background(), d, Options{Root: root})
			var off *OfflineError
			if !errors.As(err, &off) {
				t.Fatalf("%v; want an OfflineError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to contain %q", err, w)
				}
			}
			if c.notWant != "" && strings.Contains(off.Help, c.notWant) {
				t.Errorf("%v\nnames %s, which is in place", err, c.notWant)
			}
			if _, ok := Fetched(root, d); ok {
				t.Error("counts as fetched")
			}
		})
	}
	// placed by hand as the message says: checked, and fetched without a network
	write(t, filepath.Join(dir, "b.gz"), b)
	if rec, err := Get(context.Background(), d, Options{Root: root}); err != nil || rec.Files[1].Checked != "published MD5" {
		t.Fatalf("the placed files: %v, %+v", err, rec)
	}
}
