package fetch

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// server serves files by path on 127.0.0.1 with Range support (http.ServeContent); cut
// makes the next requests for a path send only that many bytes of it (announcing the whole
// length) and drop the connection. It records every request's Range header.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	files  map[string][]byte
	cut    map[string]int
	ranges []string
	paths  []string // every request's path, in order
}

// requested counts the requests for paths that start with prefix.
func (s *server) requested(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.paths {
		if strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

func newServer(t *testing.T) *server {
	s := &server{files: map[string][]byte{}, cut: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b, ok := s.files[r.URL.Path]
	n, cut := s.cut[r.URL.Path]
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	switch {
	case !ok:
		http.NotFound(w, r)
	case cut:
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
		w.Write(b[:n])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack() // the connection dies mid-transfer
		if err == nil {
			conn.Close()
		}
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
	}
}

// fixture is a deterministic file of n bytes and its MD5.
func fixture(n int) ([]byte, string) {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7919 + i/251)
	}
	return b, md5hex(b)
}

// md5hex is b's MD5 in hex.
func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// oneFile is a catalog entry of one file at the server's path /name.
func oneFile(s *server, name, md5sum string) Dataset {
	return Dataset{Name: "toy", Kinds: []string{"toy"}, Title: "Toy", Path: name,
		Files: []File{{Name: name, URLs: []string{s.URL + "/" + name}, MD5: md5sum}}}
}

// leftovers lists the dataset folder's entries other than the lock file.
func leftovers(t *testing.T, dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if e.Name() != ".pfl-data.lock" {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestGetDownloadsVerifiesAndRecords(t *testing.T) {
	s := newServer(t)
	b, sum := fixture(100_000)
	s.files["/a.bin"] = b
	root := t.TempDir()
	var log bytes.Buffer
	d := oneFile(s, "a.bin", sum)
	rec, err := Get(context.Background(), d, Options{Root: root, Progress: &log})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "toy", "a.bin"))
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("fetched file: %v, equal %v", err, bytes.Equal(got, b))
	}
	if len(rec.Files) != 1 || rec.Files[0].MD5 != sum || rec.Files[0].Checked != "published MD5" || rec.Files[0].Size != 100_000 {
		t.Fatalf("record %+v", rec)
	}
	if l := leftovers(t, filepath.Join(root, "toy")); strings.Join(l, " ") != "a.bin pfl-data.json" {
		t.Fatalf("the dataset's folder holds %v; want the file and the record", l)
	}
	if !strings.Contains(log.String(), "fetching a.bin from "+s.URL) || !strings.Contains(log.String(), "fetched a.bin: 100.0 kB") {
		t.Errorf("progress off a terminal: %q", log.String())
	}
	// fetched: neither Get nor Resolve asks the server again
	n := len(s.ranges)
	if _, err := Get(context.Background(), d, Options{Root: root}); err != nil || len(s.ranges) != n {
		t.Fatalf("second Get: %v, %d more requests", err, len(s.ranges)-n)
	}
}

func TestChecksumMismatchLeavesNothing(t *testing.T) {
	s := newServer(t)
	b, _ := fixture(5000)
	s.files["/a.bin"] = b
	root := t.TempDir()
	_, err := Get(context.Background(), oneFile(s, "a.bin", "00000000000000000000000000000000"), Options{Root: root})
	if err == nil || !strings.Contains(err.Error(), "not the published 00000000000000000000000000000000") {
		t.Fatalf("%v; want the mismatch named", err)
	}
	if l := leftovers(t, filepath.Join(root, "toy")); len(l) != 0 {
		t.Fatalf("a download whose checksum did not match left %v", l)
	}
}

func TestCutTransferResumesWithRange(t *testing.T) {
	s := newServer(t)
	b, sum := fixture(300_000)
	s.files["/a.bin"] = b
	s.cut["/a.bin"] = 120_000
	root := t.TempDir()
	d := oneFile(s, "a.bin", sum)
	_, err := Get(context.Background(), d, Options{Root: root})
	if err == nil || !strings.Contains(err.Error(), "cut off") || !strings.Contains(err.Error(), "run the same command again to resume") {
		t.Fatalf("%v; want a cut transfer named, and how to resume", err)
	}
	dir := filepath.Join(root, "toy")
	part, _ := os.ReadFile(filepath.Join(dir, "a.bin.part"))
	if len(part) != 120_000 || !bytes.Equal(part, b[:120_000]) {
		t.Fatalf(".part holds %d bytes; want the 120000 received", len(part))
	}
	if _, err := os.Stat(filepath.Join(dir, "a.bin")); err == nil {
		t.Fatal("a cut transfer left the file in place as if complete")
	}
	if _, ok := Fetched(root, d); ok {
		t.Fatal("a cut transfer counts as fetched")
	}
	delete(s.cut, "/a.bin")
	if _, err := Get(context.Background(), d, Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.bin")); !bytes.Equal(got, b) {
		t.Fatal("the resumed file differs from the served one")
	}
	if last := s.ranges[len(s.ranges)-1]; last != "bytes=120000-" {
		t.Fatalf("the resume asked for %q; want bytes=120000-", last)
	}
	if l := leftovers(t, dir); strings.Join(l, " ") != "a.bin pfl-data.json" {
		t.Fatalf("after the resume the folder holds %v", l)
	}
}

// A server that ignores Range sends the whole file again: the .part starts over.
func TestServerWithoutRangeStartsOver(t *testing.T) {
	s := newServer(t)
	b, sum := fixture(50_000)
	root := t.TempDir()
	dir := filepath.Join(root, "toy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.bin.part"), []byte("stale bytes of another attempt"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b) // 200 and the whole file, whatever the Range
	}))
	defer plain.Close()
	d := oneFile(s, "a.bin", sum)
	d.Files[0].URLs = []string{plain.URL + "/a.bin"}
	if _, err := Get(context.Background(), d, Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.bin")); !bytes.Equal(got, b) {
		t.Fatal("the file appended to a stale .part")
	}
}

func TestNotFoundTriesTheMirrorThenNamesBoth(t *testing.T) {
	s := newServer(t)
	b, sum := fixture(2000)
	root := t.TempDir()
	d := oneFile(s, "a.bin", sum)
	d.Files[0].URLs = []string{s.URL + "/gone/a.bin", s.URL + "/mirror/a.bin"}
	_, err := Get(context.Background(), d, Options{Root: root})
	if err == nil || !strings.Contains(err.Error(), s.URL+"/gone/a.bin: HTTP 404 Not Found") || !strings.Contains(err.Error(), "/mirror/a.bin: HTTP 404") {
		t.Fatalf("%v; want each address and its 404", err)
	}
	if l := leftovers(t, filepath.Join(root, "toy")); len(l) != 0 {
		t.Fatalf("a 404 left %v", l)
	}
	s.files["/mirror/a.bin"] = b
	rec, err := Get(context.Background(), d, Options{Root: root})
	if err != nil || rec.Files[0].From != s.URL+"/mirror/a.bin" {
		t.Fatalf("from the mirror: %v, %+v", err, rec)
	}
}

// A login page or a check for robots is not taken for the file.
func TestWebPageIsNotTheFile(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<html>sign in</html>"))
	}))
	defer page.Close()
	root := t.TempDir()
	d := Dataset{Name: "toy", Path: "a.zip", Files: []File{{Name: "a.zip", URLs: []string{page.URL + "/a.zip"}}}}
	if _, err := Get(context.Background(), d, Options{Root: root}); err == nil || !strings.Contains(err.Error(), "web page") {
		t.Fatalf("%v; want the web page named", err)
	}
	if l := leftovers(t, filepath.Join(root, "toy")); len(l) != 0 {
		t.Fatalf("a web page left %v", l)
	}
}

func zipOf(t *testing.T, entries map[string]string) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for name, body := range entries {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An archive without a published checksum: its SHA-256 is recorded and it is unpacked; an
// archive with an entry that leaves the folder is refused, unpacking nothing.
func TestUnpackRecordsAndRefusesEscapes(t *testing.T) {
	s := newServer(t)
	s.files["/x.zip"] = zipOf(t, map[string]string{"chest_xray/train/NORMAL/a.jpeg": "img", "chest_xray/test/NORMAL/b.jpeg": "img"})
	root := t.TempDir()
	var log bytes.Buffer
	d := Dataset{Name: "toy", Path: "chest_xray", Files: []File{{Name: "x.zip", URLs: []string{s.URL + "/x.zip"}, Unpack: true}}}
	rec, err := Get(context.Background(), d, Options{Root: root, Progress: &log})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "toy", "chest_xray", "train", "NORMAL", "a.jpeg")); err != nil || string(b) != "img" {
		t.Fatalf("unpacked file: %q, %v", b, err)
	}
	if rec.Files[0].MD5 == "" || len(rec.Files[0].SHA256) != 64 || !strings.Contains(rec.Files[0].Checked, "none published") ||
		!strings.Contains(log.String(), "recorded SHA-256 "+rec.Files[0].SHA256) {
		t.Fatalf("record %+v, log %q", rec, log.String())
	}

	s.files["/evil.zip"] = zipOf(t, map[string]string{"ok/a": "a", "../../escaped": "x"})
	root2 := t.TempDir()
	d = Dataset{Name: "toy", Path: "ok", Files: []File{{Name: "evil.zip", URLs: []string{s.URL + "/evil.zip"}, Unpack: true}}}
	if _, err := Get(context.Background(), d, Options{Root: root2}); err == nil || !strings.Contains(err.Error(), "would leave the folder") {
		t.Fatalf("%v; want the escaping entry refused", err)
	}
	if _, err := os.Stat(filepath.Join(root2, "escaped")); err == nil {
		t.Fatal("an entry escaped the folder")
	}
	if _, err := os.Stat(filepath.Join(root2, "toy", "ok")); err == nil {
		t.Fatal("a refused archive was partly unpacked")
	}
	if _, ok := Fetched(root2, d); ok {
		t.Fatal("a refused archive counts as fetched")
	}
}

// A dataset fetched by hand: the steps while its file is missing, then the placed file
// is verified and unpacked.
func TestManualDatasetGivesStepsThenTakesThePlacedFile(t *testing.T) {
	root := t.TempDir()
	d := Dataset{Name: "toy", Path: "", Manual: "put it at {dir}/x.zip", Files: []File{{Name: "x.zip", Unpack: true}}}
	_, err := Get(context.Background(), d, Options{Root: root})
	var manual *ManualError
	if !errors.As(err, &manual) || !strings.Contains(manual.Steps, "put it at "+filepath.Join(root, "toy", "x.zip")) {
		t.Fatalf("%v; want the steps with the folder filled in", err)
	}
	if err := os.WriteFile(filepath.Join(root, "toy", "x.zip"), zipOf(t, map[string]string{"stage_2_train_labels.csv": "patientId"}), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(context.Background(), d, Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "toy", "stage_2_train_labels.csv")); err != nil {
		t.Fatal(err)
	}
}

func TestResolveFindsTheDataAndNamesTheCommand(t *testing.T) {
	s := newServer(t)
	b, sum := fixture(1000)
	s.files["/toy.tar.gz"] = b
	saved := Catalog
	t.Cleanup(func() { Catalog = saved })
	Catalog = []Dataset{oneFile(s, "toy.tar.gz", sum)}
	root := t.TempDir()
	o := Options{Root: root}
	ctx := context.Background()

	// a relative path that exists is used as it is (data/... in the current folder)
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("data", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("data/toy.tar.gz", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Resolve(ctx, "toy:data/toy.tar.gz", false, o); err != nil || got != "toy:data/toy.tar.gz" {
		t.Fatalf("an existing path: %q, %v", got, err)
	}
	// missing, not fetched: the error names both places and the command
	_, err := Resolve(ctx, "toy:data/other.tar.gz", false, o)
	if !IsMissing(err) || !strings.Contains(err.Error(), "pfl data get toy") || !strings.Contains(err.Error(), "data/other.tar.gz") ||
		!strings.Contains(err.Error(), filepath.Join(root, "toy", "toy.tar.gz")) || !strings.Contains(err.Error(), "data.download: true") {
		t.Fatalf("%v; want where it looked and pfl data get toy", err)
	}
	// an absolute path is the user's own copy: no fallback
	if _, err := Resolve(ctx, "toy:/nonexistent/toy.tar.gz", true, o); err == nil || !strings.Contains(err.Error(), "/nonexistent/toy.tar.gz does not exist") {
		t.Fatalf("a missing absolute path: %v", err)
	}
	if len(s.ranges) != 0 {
		t.Fatal("Resolve fetched without being asked to")
	}
	// data.download: fetched into the data folder, and found there from then on
	want := "toy:" + filepath.Join(root, "toy", "toy.tar.gz")
	for _, download := range []bool{true, false} {
		if got, err := Resolve(ctx, "toy:data/other.tar.gz", download, o); err != nil || got != want {
			t.Fatalf("download %v: %q, %v; want %q", download, got, err, want)
		}
	}
	if got, err := Resolve(ctx, "toy", false, o); err != nil || got != want {
		t.Fatalf("no path: %q, %v; want %q", got, err, want)
	}
	if got, err := Resolve(ctx, "synthetic:300", false, o); err != nil || got != "synthetic:300" {
		t.Fatalf("a kind pfl does not fetch: %q, %v", got, err)
	}
	// a system's copy (Debian's Fashion-MNIST) is used before any fetch, for no path or a
	// relative one that is missing
	system := t.TempDir()
	Catalog = []Dataset{{Name: "sys", Kinds: []string{"sys"}, System: system, Files: []File{{Name: "x", URLs: []string{s.URL + "/x"}}}}}
	for spec, want := range map[string]string{"sys": "sys", "sys:data/none": "sys:" + system} {
		if got, err := Resolve(ctx, spec, true, o); err != nil || got != want {
			t.Errorf("Resolve(%q) with a system copy = %q, %v; want %q", spec, got, err, want)
		}
	}
	if len(s.ranges) != 1 {
		t.Fatalf("%d requests; want the one fetch above", len(s.ranges))
	}
}

func TestRootIsPFLDataOrTheCache(t *testing.T) {
	t.Setenv(RootEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/cache")
	if r, err := Root(); err != nil || r != "/cache/pfl/data" {
		t.Fatalf("Root() = %q, %v; want /cache/pfl/data", r, err)
	}
	t.Setenv(RootEnv, "/data/sets")
	if r, err := Root(); err != nil || r != "/data/sets" {
		t.Fatalf("Root() with %s = %q, %v", RootEnv, r, err)
	}
}

// On a terminal the meter redraws one line in place: a bar, the percentage, the bytes of
// the total and the rate; a transfer of unknown length shows the bytes so far.
func TestProgressBarOnATerminal(t *testing.T) {
	var out bytes.Buffer
	m := &meter{w: &out, tty: true, name: "a.bin", total: 2000, start: time.Now()} // a bytes.Buffer is no terminal
	m.Write(make([]byte, 500))
	m.finish(true)
	got := out.String()
	if !strings.HasPrefix(got, "\ra.bin [=======                       ]  25% 500 bytes of 2.0 kB, ") || !strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 1 {
		t.Fatalf("bar %q", got)
	}
	out.Reset()
	m = &meter{w: &out, tty: true, name: "b.bin", total: -1, start: time.Now()}
	m.Write(make([]byte, 1500))
	m.finish(true)
	if got := out.String(); !strings.HasPrefix(got, "\rb.bin 1.5 kB, ") {
		t.Fatalf("unknown length: %q", got)
	}
}

// hostile is a server's misbehaviour: after n bytes of the file, announced or not (length
// < 0: no Content-Length), it stalls (until the client goes, or the test ends) or sends
// zeros without end.
type hostile struct {
	length int64
	n      int
	then   string // "stall" or "endless"; "" ends the response
}

func (h hostile) serve(done <-chan struct{}, b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		if h.length >= 0 {
			w.Header().Set("Content-Length", strconv.FormatInt(h.length, 10))
		}
		if h.then == "stall" && h.n < 0 { // silent before its headers
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		w.WriteHeader(http.StatusOK)
		w.Write(b[:h.n])
		w.(http.Flusher).Flush()
		switch h.then {
		case "stall":
			select {
			case <-r.Context().Done():
			case <-done:
			}
		case "endless":
			zeros := make([]byte, 64<<10)
			for {
				if _, err := w.Write(zeros); err != nil {
					return
				}
			}
		}
	}
}

// TestHostileServersAreHandled: a server that stalls (before or after its headers), sends
// more than the file's size or never stops, a disk too small or full, and an interruption
// mid-transfer each end the download within seconds with an error that names the file or
// its folder; only a transfer cut short suggests resuming, and only it keeps a .part file.
func TestHostileServersAreHandled(t *testing.T) {
	saved := IdleLimit
	t.Cleanup(func() { IdleLimit = saved })
	const idle = time.Second // short, but far above a loopback server's answer
	IdleLimit = idle
	b, sum := fixture(20_000)
	full := int64(len(b))
	for _, c := range []struct {
		name    string
		server  hostile
		size    int64                          // the catalog's size; 0: not given
		setup   func(t *testing.T, dir string) // before Get; nil: nothing
		cancel  bool                           // the context ends once the .part holds the bytes sent
		want    []string
		resume  bool  // the error suggests resuming
		kept    int64 // the .part's length afterwards; -1: none
		request bool  // the server is asked
	}{
		{name: "stall after the headers", server: hostile{full, 1000, "stall"}, size: full,
			want: []string{"sent nothing for 1s", "cut off after 1.0 kB"}, resume: true, kept: 1000, request: true},
		{name: "stall before the headers", server: hostile{full, -1, "stall"}, size: full,
			want: []string{"sent nothing for 1s (no answer to the request)"}, kept: -1, request: true},
		{name: "endless, unannounced", server: hostile{-1, 0, "endless"}, size: full,
			want: []string{"sent more than the 20000 bytes a.bin has", "removed"}, kept: -1, request: true},
		{name: "more than the size, announced", server: hostile{1 << 40, 0, "endless"}, size: full,
			want: []string{"announces 1099511627776 bytes", "more than the 20000 bytes a.bin has"}, kept: -1, request: true},
		{name: "a disk without room", server: hostile{full, int(full), ""}, size: 1 << 50,
			want: []string{"the file needs 1.1 PB", "free", RootEnv}, kept: -1},
		{name: "a disk that fills up", server: hostile{full, int(full), ""}, size: full,
			setup: func(t *testing.T, dir string) { // /dev/full answers every write with ENOSPC
				if err := os.Symlink("/dev/full", filepath.Join(dir, "a.bin.part")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"is full", "partial download was removed", RootEnv}, kept: -1, request: true},
		{name: "interrupted mid-transfer", server: hostile{full, 1000, "stall"}, size: full, cancel: true,
			want: []string{"interrupted", "cut off after 1.0 kB"}, resume: true, kept: 1000, request: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			requests := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests++
				c.server.serve(done, b)(w, r)
			}))
			defer srv.Close()
			defer close(done)
			if c.cancel {
				IdleLimit = time.Minute // the interruption, not the idle limit, ends it
				defer func() { IdleLimit = idle }()
			}
			root := t.TempDir()
			dir := filepath.Join(root, "toy")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup(t, dir)
			}
			d := Dataset{Name: "toy", Path: "a.bin", Files: []File{{Name: "a.bin", URLs: []string{srv.URL + "/a.bin"}, MD5: sum, Size: c.size}}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				go func() {
					for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
						if st, err := os.Stat(filepath.Join(dir, "a.bin.part")); err == nil && st.Size() == int64(c.server.n) {
							break
						}
					}
					cancel()
				}()
			}
			start := time.Now()
			_, err := Get(ctx, d, Options{Root: root})
			if took := time.Since(start); took > 30*time.Second {
				t.Fatalf("Get took %v", took)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(c.want, "a.bin") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to contain %q", err, w)
				}
			}
			if got := strings.Contains(err.Error(), "resume"); got != c.resume {
				t.Errorf("%v\nsuggests resuming: %v, want %v", err, got, c.resume)
			}
			st, serr := os.Lstat(filepath.Join(dir, "a.bin.part"))
			switch {
			case c.kept < 0 && serr == nil:
				t.Errorf("a.bin.part (%d bytes) left behind", st.Size())
			case c.kept >= 0 && (serr != nil || st.Size() != c.kept):
				t.Errorf("a.bin.part: %v; want its %d bytes kept", serr, c.kept)
			}
			if (requests > 0) != c.request {
				t.Errorf("%d requests; want some: %v", requests, c.request)
			}
			if _, ok := Fetched(root, d); ok {
				t.Error("counts as fetched")
			}
		})
	}
}

// TestLockWaitEndsWithTheContext: a Get waiting for another process's fetch of the same
// dataset says so, and ends when its context does, naming the lock.
func TestLockWaitEndsWithTheContext(t *testing.T) {
	root := t.TempDir()
	d := Dataset{Name: "toy", Path: "a.bin", Files: []File{{Name: "a.bin", URLs: []string{"http://127.0.0.1:1/a.bin"}}}}
	if err := os.MkdirAll(filepath.Join(root, "toy"), 0o755); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(root, "toy", ".pfl-data.lock")
	holder, err := lockFile(context.Background(), lock, "toy", Options{}) // flock(2) locks conflict between open files of one process too
	if err != nil {
		t.Fatal(err)
	}
	defer holder()
	ctx, cancel := context.WithCancel(context.Background())
	var log syncBuffer
	done := make(chan error, 1)
	go func() {
		_, err := Get(ctx, d, Options{Root: root, Progress: &log})
		done <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(log.String(), "waiting for another pfl fetching toy"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no word of the wait: %q", log.String())
		}
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "interrupted while waiting") || !strings.Contains(err.Error(), lock) {
			t.Fatalf("%v; want the interrupted wait and the lock named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the wait for the lock outlived its context by 30 s")
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFetchedDatasetIsCheckedAgain: pfl data get on a dataset fetched already checks its
// files against the SHA-256 recorded, and names one that changed since (leaving it as it
// is).
func TestFetchedDatasetIsCheckedAgain(t *testing.T) {
	s := newServer(t)
	b, sum := fixture(3000)
	s.files["/a.bin"] = b
	root := t.TempDir()
	d := oneFile(s, "a.bin", sum)
	rec, err := Get(context.Background(), d, Options{Root: root})
	if err != nil || rec.Files[0].Rechecked {
		t.Fatalf("first Get: %v, %+v; want a fresh fetch", err, rec)
	}
	path, recorded := filepath.Join(root, "toy", "a.bin"), rec.Files[0].SHA256
	for _, c := range []struct {
		name    string
		content []byte
		err     string
	}{
		{"unchanged", b, ""},
		{"a byte changed", append([]byte{b[0] ^ 1}, b[1:]...), "changed since it was fetched"},
		{"truncated", b[:100], "100 bytes of SHA-256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, c.content, 0o644); err != nil {
				t.Fatal(err)
			}
			n := len(s.ranges)
			rec, err := Get(context.Background(), d, Options{Root: root})
			if len(s.ranges) != n {
				t.Errorf("%d requests; want the file checked, not fetched", len(s.ranges)-n)
			}
			if c.err == "" {
				if err != nil || !rec.Files[0].Rechecked {
					t.Fatalf("%v, %+v; want it checked again", err, rec)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), recorded) {
				t.Fatalf("%v; want %s named as changed", err, path)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, c.content) {
				t.Fatal("the changed file was altered")
			}
		})
	}
}
