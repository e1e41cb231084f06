package fetch

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RootEnv names the environment variable that sets the data folder.
const RootEnv = "PFL_DATA"

// recordFile is the record a fetched dataset's folder holds; its presence means complete.
const recordFile = "pfl-data.json"

// Root returns the data folder: $PFL_DATA, else <the user's cache folder>/pfl/data
// (~/.cache/pfl/data on Linux), so that it does not depend on the current folder.
func Root() (string, error) {
	if r := os.Getenv(RootEnv); r != "" {
		return filepath.Abs(r)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no data folder: %v; set %s to one", err, RootEnv)
	}
	return filepath.Join(cache, "pfl", "data"), nil
}

// Options are where and how Get and Resolve fetch.
type Options struct {
	Root string // the data folder; "": Root()
	// Progress receives a progress bar when it is a terminal, else a line per file; nil:
	// nothing.
	Progress io.Writer
	Client   *http.Client // nil: a client that gives up on a server silent for a minute
}

func (o Options) root() (string, error) {
	if o.Root != "" {
		return filepath.Abs(o.Root)
	}
	return Root()
}

func (o Options) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	return &http.Client{Transport: t}
}

func (o Options) logf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// Record is what pfl-data.json holds: the dataset's files as verified.
type Record struct {
	Dataset string       `json:"dataset"`
	Files   []FileRecord `json:"files"`
}

// FileRecord is one verified file.
type FileRecord struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	MD5    string `json:"md5"`
	SHA256 string `json:"sha256"`
	// Checked says what the file was checked against: "published MD5", or "none published
	// (SHA-256 recorded)".
	Checked string `json:"checked"`
	From    string `json:"from,omitempty"` // the address it came from; "" when placed by hand
}

// Dir is the folder of dataset d under the data folder root.
func Dir(root string, d Dataset) string { return filepath.Join(root, d.Name) }

// Fetched reads the record of d under root; ok is false when d has not been fetched
// completely (no record, or a file or the path it names is missing).
func Fetched(root string, d Dataset) (rec Record, ok bool) {
	dir := Dir(root, d)
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Dataset != d.Name {
		return Record{}, false
	}
	for _, f := range d.Files {
		if _, err := os.Stat(filepath.Join(dir, f.Name)); err != nil {
			return Record{}, false
		}
	}
	if _, err := os.Stat(filepath.Join(dir, d.Path)); err != nil {
		return Record{}, false
	}
	return rec, true
}

// Get fetches dataset d into its folder under the data folder: each file downloaded (or
// resumed from its .part) from its addresses in turn, checked against its published MD5
// (or, where none is published, its SHA-256 recorded), renamed into place, archives
// unpacked, and the record written last. A file already in place is checked, not fetched
// again. Another process fetching the same dataset is waited for. A dataset fetched by
// hand (d.Manual) whose files are missing is a *ManualError carrying the steps.
func Get(ctx context.Context, d Dataset, o Options) (Record, error) {
	root, err := o.root()
	if err != nil {
		return Record{}, err
	}
	dir := Dir(root, d)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Record{}, err
	}
	unlock, err := lockFile(filepath.Join(dir, ".pfl-data.lock"))
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	if rec, ok := Fetched(root, d); ok {
		return rec, nil
	}
	rec := Record{Dataset: d.Name}
	for _, f := range d.Files {
		path := filepath.Join(dir, f.Name)
		from := ""
		if _, err := os.Stat(path); err != nil {
			if len(f.URLs) == 0 {
				return Record{}, &ManualError{Dataset: d.Name, Steps: d.manualSteps(dir)}
			}
			if from, err = download(ctx, f, path, o); err != nil {
				return Record{}, fmt.Errorf("%s: %s: %w", d.Name, f.Name, err)
			}
		}
		fr, err := verify(path, f)
		if err != nil {
			return Record{}, fmt.Errorf("%s: %w", d.Name, err)
		}
		fr.From = from
		if f.MD5 == "" {
			o.logf("%s: no checksum is published; recorded SHA-256 %s", f.Name, fr.SHA256)
		}
		rec.Files = append(rec.Files, fr)
		if f.Unpack {
			o.logf("unpacking %s", f.Name)
			if err := unzip(path, dir); err != nil {
				return Record{}, fmt.Errorf("%s: %w", d.Name, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, d.Path)); err != nil {
		if d.Manual != "" && len(d.Files) == 0 {
			return Record{}, &ManualError{Dataset: d.Name, Steps: d.manualSteps(dir)}
		}
		return Record{}, fmt.Errorf("%s: fetched, but %s is not there (the files differ from what pfl knows)", d.Name, filepath.Join(dir, d.Path))
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		err = writeAtomic(filepath.Join(dir, recordFile), append(b, '\n'))
	}
	return rec, err
}

// verify checks the file at path against f's published MD5 and returns its record; a
// mismatch removes nothing (the caller decides) and names both sums.
func verify(path string, f File) (FileRecord, error) {
	m, s, n, err := sums(path)
	if err != nil {
		return FileRecord{}, err
	}
	fr := FileRecord{Name: f.Name, Size: n, MD5: m, SHA256: s, Checked: "none published (SHA-256 recorded)"}
	if f.MD5 != "" {
		if !strings.EqualFold(m, f.MD5) {
			return fr, fmt.Errorf("%s: its MD5 is %s, not the published %s: a damaged or different file; remove it and fetch again", path, m, f.MD5)
		}
		fr.Checked = "published MD5"
	}
	return fr, nil
}

// sums returns the MD5 and SHA-256 (hex) and the length of the file at path.
func sums(path string) (string, string, int64, error) {
	r, err := os.Open(path)
	if err != nil {
		return "", "", 0, err
	}
	defer r.Close()
	m, s := md5.New(), sha256.New()
	n, err := io.Copy(io.MultiWriter(m, s), r)
	if err != nil {
		return "", "", 0, fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(m.Sum(nil)), hex.EncodeToString(s.Sum(nil)), n, nil
}

// download fetches f into path by way of path.part, trying its addresses in turn, and
// returns the address it came from. The .part file is resumed with a Range request when a
// former attempt was cut off; it becomes path only once the checksum matched (a mismatch
// removes it, since resuming it would keep the bad bytes).
func download(ctx context.Context, f File, path string, o Options) (string, error) {
	part := path + ".part"
	var errs []string
	for _, u := range f.URLs {
		err := downloadFrom(ctx, u, part, o)
		if err == nil {
			if _, verr := verify(part, f); verr != nil {
				os.Remove(part)
				return "", fmt.Errorf("from %s: %w (the download was removed)", u, verr)
			}
			if err := syncFile(part); err != nil {
				return "", err
			}
			return u, os.Rename(part, path)
		}
		if cut := (*cutError)(nil); errors.As(err, &cut) || ctx.Err() != nil {
			// the bytes so far are kept for the next attempt
			have := int64(0)
			if st, serr := os.Stat(part); serr == nil {
				have = st.Size()
			}
			return "", fmt.Errorf("from %s: %w; run the same command again to resume after the %s in %s", u, err, byteCount(have), part)
		}
		errs = append(errs, fmt.Sprintf("%s: %v", u, err))
	}
	return "", errors.New(strings.Join(errs, "; "))
}

// cutError is a transfer that ended before the file did; the .part file keeps its bytes.
type cutError struct {
	have int64 // bytes in the .part file
	err  error
}

func (e *cutError) Error() string {
	return fmt.Sprintf("the transfer was cut off after %s: %v", byteCount(e.have), e.err)
}

func (e *cutError) Unwrap() error { return e.err }

// downloadFrom downloads address u into part, continuing it from its length when the
// server takes a Range request (else starting over).
func downloadFrom(ctx context.Context, u, part string, o Options) error {
	var have int64
	if st, err := os.Stat(part); err == nil {
		have = st.Size()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := o.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	flags := os.O_CREATE | os.O_WRONLY
	switch resp.StatusCode {
	case http.StatusOK: // the whole file: a first attempt, or a server that ignores Range
		flags |= os.O_TRUNC
		have = 0
	case http.StatusPartialContent:
		if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != have {
			os.Remove(part) // a range other than the one asked for: start over next time
			return fmt.Errorf("the server answered a request for bytes %d- with %q", have, resp.Header.Get("Content-Range"))
		}
		flags |= os.O_APPEND
	case http.StatusRequestedRangeNotSatisfiable:
		if have > 0 {
			return nil // the .part file holds the whole file already; the checksum decides
		}
		return fmt.Errorf("HTTP %s", resp.Status)
	default:
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/html") {
		return fmt.Errorf("the server answered with a web page (%s), not the file: a login or a check for robots; download it in a browser instead", ct)
	}
	w, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return err
	}
	total := int64(-1)
	if resp.ContentLength >= 0 {
		total = have + resp.ContentLength
	}
	bar := newMeter(o.Progress, filepath.Base(strings.TrimSuffix(part, ".part")), u, have, total)
	n, err := io.Copy(w, io.TeeReader(resp.Body, bar))
	bar.finish(err == nil)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && resp.ContentLength >= 0 && n < resp.ContentLength {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return &cutError{have: have + n, err: err}
	}
	return nil
}

// rangeStart reads the first byte of a Content-Range header ("bytes 100-199/200").
func rangeStart(h string) (int64, bool) {
	spec, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, false
	}
	first, _, ok := strings.Cut(spec, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(first, 10, 64)
	return n, err == nil
}

// syncFile flushes path to the disk, so that the rename that follows cannot make a file
// whose bytes a crash loses.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeAtomic writes b to path through a temporary file in its folder, renamed into place.
func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// lockFile takes an exclusive flock(2) on path, waiting for another process that holds it
// (two ranks of a run fetching the same dataset), and returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// byteCount writes n bytes for people: 512 bytes, 1.5 kB, 170.5 MB.
func byteCount(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
