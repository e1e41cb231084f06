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
	"math"
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
	// Client makes the requests; nil: one with http.DefaultTransport's settings. Whatever
	// the client, a server silent for IdleLimit is given up on.
	Client *http.Client
	// From is where this Get takes the dataset's files instead of their addresses (pfl data
	// get --from): an address (http:// or https://), a local file, or a local folder
	// holding the files (see sourcesOf). "": the mirror, then the catalog's addresses.
	From string
	// Mirror is a folder or base address holding copies of the files, tried before the
	// catalog's addresses; "": $PFL_DATA_MIRROR (MirrorEnv).
	Mirror string
}

// IdleLimit is how long a download waits for a server that sends nothing (no answer to
// the request, or no byte of the file) before giving up on it; a variable so that tests
// can shorten it.
var IdleLimit = time.Minute

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
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
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
	From    string `json:"from,omitempty"` // the address or local file it came from; "" when placed by hand
	// Rechecked says that Get found the dataset fetched already and checked this file
	// again against the SHA-256 recorded when it was fetched (not stored).
	Rechecked bool `json:"-"`
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
// again; so is a dataset fetched already, whose files are checked again against the
// SHA-256 its record holds (a changed one is an error naming it). Another process fetching
// the same dataset is waited for, until ctx ends. A dataset fetched by hand (d.Manual)
// whose files are missing is a *ManualError carrying the steps.
func Get(ctx context.Context, d Dataset, o Options) (Record, error) {
	root, err := o.root()
	if err != nil {
		return Record{}, err
	}
	dir := Dir(root, d)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Record{}, err
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, ".pfl-data.lock"), d.Name, o)
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	if rec, ok := Fetched(root, d); ok {
		if err := recheck(dir, d.Name, rec); err != nil {
			return Record{}, err
		}
		return rec, nil
	}
	if err := checkFrom(o.From, d); err != nil {
		return Record{}, err
	}
	rec := Record{Dataset: d.Name}
	for i, f := range d.Files {
		path := filepath.Join(dir, f.Name)
		from := ""
		if _, err := os.Stat(path); err != nil {
			srcs := sourcesOf(d, f, o)
			if len(srcs) == 0 {
				return Record{}, &ManualError{Dataset: d.Name, Steps: d.manualSteps(dir)}
			}
			if from, err = download(ctx, f, path, srcs, o); err != nil {
				if _, ok := errors.AsType[*unreachedError](err); ok {
					if len(f.URLs) == 0 && o.From == "" { // only the mirror was tried
						o.logf("%v", err)
						return Record{}, &ManualError{Dataset: d.Name, Steps: d.manualSteps(dir)}
					}
					return Record{}, &OfflineError{Dataset: d.Name, File: f.Name, Err: err, Help: placeHelp(d, dir, d.Files[i:])}
				}
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

// recheck checks each file of rec, in dir, against the size and SHA-256 recorded when it
// was fetched, and marks it Rechecked.
func recheck(dir, name string, rec Record) error {
	for i, fr := range rec.Files {
		path := filepath.Join(dir, fr.Name)
		_, s, n, err := sums(path)
		if err != nil {
			return err
		}
		if n != fr.Size || !strings.EqualFold(s, fr.SHA256) {
			return fmt.Errorf("%s: %s changed since it was fetched: %d bytes of SHA-256 %s, not the %d bytes of SHA-256 %s recorded in %s; remove it and run pfl data get %s again to fetch it anew",
				name, path, n, s, fr.Size, fr.SHA256, filepath.Join(dir, recordFile), name)
		}
		rec.Files[i].Rechecked = true
	}
	return nil
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

// download fetches f into path by way of path.part, trying its sources (addresses, or
// local files, which are copied) in turn, and returns the one it came from. The .part file
// is resumed with a Range request when a former attempt was cut off; it becomes path only
// once the checksum matched (a mismatch removes it, since resuming it would keep the bad
// bytes). More bytes than f.Size (or, for a file of unknown size, than maxUnknownSize) are
// refused and removed; so is a download that fills the disk, which is not resumed, and a
// file the disk has no room for is not begun. When every source failed otherwise (no
// network, a 404, a file not in the folder) the error is an *unreachedError.
func download(ctx context.Context, f File, path string, srcs []string, o Options) (string, error) {
	part := path + ".part"
	if f.Size > 0 {
		have := int64(0)
		if st, err := os.Stat(part); err == nil {
			have = st.Size()
		}
		if have > f.Size {
			os.Remove(part) // longer than the file: bad bytes, not a start to resume
			have = 0
		}
		if err := checkRoom(filepath.Dir(part), f.Size-have); err != nil {
			return "", err
		}
	}
	var errs []string
	for _, u := range srcs {
		var err error
		if isAddress(u) {
			err = downloadFrom(ctx, u, f, part, o)
		} else {
			err = copyFrom(ctx, u, f, part, o)
		}
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
		if room := (*roomError)(nil); errors.As(err, &room) {
			return "", err
		}
		if cut := (*cutError)(nil); errors.As(err, &cut) || ctx.Err() != nil {
			// the bytes so far are kept for the next attempt
			have := int64(0)
			if st, serr := os.Stat(part); serr == nil {
				have = st.Size()
			}
			if have == 0 {
				return "", fmt.Errorf("from %s: %w; nothing was written: run the same command again to fetch it", u, err)
			}
			return "", fmt.Errorf("from %s: %w; run the same command again to resume after the %s in %s", u, err, byteCount(have), part)
		}
		errs = append(errs, fmt.Sprintf("%s: %v", u, err))
	}
	return "", &unreachedError{strings.Join(errs, "; ")}
}

// maxUnknownSize bounds a file whose size the catalog does not give (16 GiB, far above
// any file it lists): a server that never stops sending cannot fill the disk.
const maxUnknownSize = 16 << 30

// cutError is a transfer that ended before the file did; the .part file keeps its bytes.
type cutError struct {
	have int64 // bytes in the .part file
	err  error
}

func (e *cutError) Error() string {
	return fmt.Sprintf("the transfer was cut off after %s: %v", byteCount(e.have), e.err)
}

func (e *cutError) Unwrap() error { return e.err }

// roomError is a download the disk has no room for: refused before it began, or stopped
// (and removed) when the disk filled up. Another address would not help, nor would
// resuming.
type roomError struct{ msg string }

func (e *roomError) Error() string { return e.msg }

// checkRoom refuses a download of need more bytes into dir when its file system has less
// free space than that.
func checkRoom(dir string, need int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil // no figure to go by: the writes will tell
	}
	if st.Bsize <= 0 || st.Bavail > uint64(math.MaxInt64)/uint64(st.Bsize) {
		return nil // no figure, or more room than any file needs
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free >= need {
		return nil
	}
	return &roomError{fmt.Sprintf("the file needs %s and the disk holding %s has %s free; free some space, or set %s to a folder on a larger disk, and run the command again",
		byteCount(need), dir, byteCount(free), RootEnv)}
}

// downloadFrom downloads address u into part, continuing it from its length when the
// server takes a Range request (else starting over), and gives up when the server sends
// nothing for IdleLimit.
func downloadFrom(ctx context.Context, u string, f File, part string, o Options) error {
	var have int64
	if st, err := os.Stat(part); err == nil {
		have = st.Size()
	}
	ctx, silent := watchIdle(ctx)
	defer silent.stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := o.client().Do(req)
	if err != nil {
		return silent.explain(err, "no answer to the request")
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
	total, err := announced(f, have, resp.ContentLength)
	if err != nil {
		return err
	}
	if resp.ContentLength >= 0 && f.Size <= 0 {
		if err := checkRoom(filepath.Dir(part), resp.ContentLength); err != nil {
			return err
		}
	}
	return receive(resp.Body, part, flags, have, total, f, u, silent, o)
}

// announced is the file's length as the server announces it (have bytes kept plus the
// length of the response; -1: not announced); a server announcing more than the catalog's
// size is refused.
func announced(f File, have, length int64) (int64, error) {
	if length < 0 {
		return -1, nil
	}
	if f.Size > 0 && have+length > f.Size {
		return 0, fmt.Errorf("the server announces %d bytes from byte %d on, more than the %d bytes %s has; refused", length, have, f.Size, f.Name)
	}
	return have + length, nil
}

// receive copies body into part (opened with flags, after have bytes), no further than
// the file's size, reporting progress; a transfer cut short (before the total announced,
// or else the catalog's size) keeps its bytes (a cutError), one that goes past the size or
// fills the disk is removed.
func receive(body io.Reader, part string, flags int, have, total int64, f File, u string, silent *idleWatch, o Options) error {
	w, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return err
	}
	limit := int64(maxUnknownSize)
	if f.Size > 0 {
		limit = f.Size
		if total < 0 {
			total = f.Size
		}
	}
	bar := newMeter(o.Progress, filepath.Base(strings.TrimSuffix(part, ".part")), u, have, total)
	n, err := io.Copy(w, io.TeeReader(io.LimitReader(silent.reader(body), limit-have+1), bar))
	bar.finish(err == nil && have+n <= limit)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, syscall.ENOSPC):
		os.Remove(part)
		return &roomError{fmt.Sprintf("the disk holding %s is full (after %s of %s's %s); the partial download was removed: free some space, or set %s to a folder on a larger disk, and run the command again",
			filepath.Dir(part), byteCount(have+n), f.Name, sizeText(total), RootEnv)}
	case err == nil && have+n > limit && f.Size > 0:
		os.Remove(part)
		return fmt.Errorf("the server sent more than the %d bytes %s has; refused (the download was removed)", limit, f.Name)
	case err == nil && have+n > limit:
		os.Remove(part)
		return fmt.Errorf("the server sent more than %s for %s, more than pfl takes for a file of unknown size; refused (the download was removed)", byteCount(limit), f.Name)
	case err == nil && total >= 0 && have+n < total:
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return &cutError{have: have + n, err: silent.explain(err, "")}
	}
	return nil
}

// sizeText is a length for a message; < 0: unknown.
func sizeText(n int64) string {
	if n < 0 {
		return "unknown length"
	}
	return byteCount(n)
}

// idleWatch cancels a download's context when the server has sent nothing for IdleLimit.
type idleWatch struct {
	ctx    context.Context
	timer  *time.Timer
	cancel context.CancelCauseFunc
}

// errSilent is the cause of a context that idleWatch cancelled.
var errSilent = errors.New("silent server")

// watchIdle returns a context that ends IdleLimit after the call, unless the reader of the
// watch sees bytes in the meantime (each of which starts the wait over).
func watchIdle(ctx context.Context) (context.Context, *idleWatch) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &idleWatch{ctx: ctx, cancel: cancel}
	w.timer = time.AfterFunc(IdleLimit, func() { cancel(errSilent) })
	return ctx, w
}

func (w *idleWatch) stop() {
	w.timer.Stop()
	w.cancel(nil)
}

// reader is body, the wait starting over with each read that brings bytes.
func (w *idleWatch) reader(body io.Reader) io.Reader { return idleReader{body, w} }

// explain names an error that the watch caused (what: the stage it interrupted, "" for the
// transfer) or that an interruption (the parent context's end) caused.
func (w *idleWatch) explain(err error, what string) error {
	switch cause := context.Cause(w.ctx); {
	case errors.Is(cause, errSilent) && what != "":
		return fmt.Errorf("the server sent nothing for %v (%s); gave up on it", IdleLimit, what)
	case errors.Is(cause, errSilent):
		return fmt.Errorf("the server sent nothing for %v; gave up on it", IdleLimit)
	case cause != nil:
		return errors.New("interrupted")
	}
	return err
}

type idleReader struct {
	r io.Reader
	w *idleWatch
}

// Read reads from the body and, when bytes came, starts the wait over.
func (r idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.w.timer.Reset(IdleLimit)
	}
	return n, err
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
// (two ranks of a run fetching the same dataset, or a second pfl data get) until ctx ends,
// and returns its release. The wait polls, so that an interruption (Ctrl-C, SIGTERM) ends
// it within lockPoll.
func lockFile(ctx context.Context, path, name string, o Options) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for waited := false; ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !waited {
			o.logf("waiting for another pfl fetching %s (it holds %s)", name, path)
			waited = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("%s: interrupted while waiting for another pfl fetching it (it holds %s); nothing was fetched", name, path)
		case <-time.After(lockPoll):
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// lockPoll is how often a wait for the dataset's lock tries again.
const lockPoll = 100 * time.Millisecond

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
