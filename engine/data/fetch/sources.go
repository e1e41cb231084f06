package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MirrorEnv names the environment variable of a mirror: a folder or a base address
// (http:// or https://) holding copies of the datasets' files, tried before the catalog's
// addresses. A file is looked for as <mirror>/<dataset>/<file> (the layout of a data
// folder, so that another machine's $PFL_DATA serves as one), then as <mirror>/<file>.
const MirrorEnv = "PFL_DATA_MIRROR"

// isAddress reports whether a source is a network address rather than a local path.
func isAddress(src string) bool {
	return strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")
}

// localPath is the path a local source names (a file:// address is one too).
func localPath(src string) string {
	if p, ok := strings.CutPrefix(src, "file://"); ok {
		return p
	}
	return src
}

// mirror is the mirror Get tries: o.Mirror, else $PFL_DATA_MIRROR.
func (o Options) mirror() string {
	if o.Mirror != "" {
		return o.Mirror
	}
	return os.Getenv(MirrorEnv)
}

// checkFrom checks that from (Options.From) can give d's files before anything is locked
// in or fetched: a local path must exist, and a single file serves a dataset of one file.
func checkFrom(from string, d Dataset) error {
	if from == "" {
		return nil
	}
	if len(d.Files) == 0 {
		return fmt.Errorf("%s has no file to take from %s: it is made by scripts, not fetched (pfl data get %s prints the steps)", d.Name, from, d.Name)
	}
	if isAddress(from) {
		return nil
	}
	st, err := os.Stat(localPath(from))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--from %s: no such file or folder; give the file, a folder holding it, or an address (http:// or https://)", from)
	case err != nil:
		return fmt.Errorf("--from %s: %w", from, err)
	case st.IsDir():
		return nil
	case len(d.Files) > 1:
		return fmt.Errorf("--from %s is one file, and %s has %d (%s): give the folder holding them", from, d.Name, len(d.Files), strings.Join(fileNames(d.Files), ", "))
	case !st.Mode().IsRegular():
		return fmt.Errorf("--from %s is not a regular file (%v); give the file itself or the folder holding it", from, st.Mode().Type())
	}
	return nil
}

// sourcesOf lists where Get looks for file f of d, in order: only o.From when it is set
// (an address: f's own for a dataset of one file unless it ends in "/", else a base the
// file's name is added to; a folder: <folder>/<dataset>/<file>, then <folder>/<file>; a
// file: itself), else the mirror's copies and then f's addresses. None: a file fetched by
// hand, with no mirror.
func sourcesOf(d Dataset, f File, o Options) []string {
	if o.From != "" {
		return fromSources(o.From, d, f)
	}
	var out []string
	if m := o.mirror(); m != "" {
		out = append(out, inFolder(m, d, f)...)
	}
	return append(out, f.URLs...)
}

// fromSources are the sources --from names for file f of d (see sourcesOf).
func fromSources(from string, d Dataset, f File) []string {
	if isAddress(from) {
		if len(d.Files) == 1 && !strings.HasSuffix(from, "/") {
			return []string{from}
		}
		return []string{strings.TrimSuffix(from, "/") + "/" + f.Name}
	}
	if st, err := os.Stat(localPath(from)); err == nil && !st.IsDir() {
		return []string{localPath(from)}
	}
	return inFolder(from, d, f)
}

// inFolder are the places of file f of d in a folder or under a base address: the layout
// of a data folder (<base>/<dataset>/<file>), then the file alone (<base>/<file>).
func inFolder(base string, d Dataset, f File) []string {
	if isAddress(base) {
		base = strings.TrimSuffix(base, "/")
		return []string{base + "/" + d.Name + "/" + f.Name, base + "/" + f.Name}
	}
	base = localPath(base)
	return []string{filepath.Join(base, d.Name, f.Name), filepath.Join(base, f.Name)}
}

// copyFrom copies the local file src into part (replacing what it held), no further than
// f's size (or maxUnknownSize), and only from a regular file (a device or a pipe could
// send without end); ctx ends it between chunks. A failure removes part.
func copyFrom(ctx context.Context, src string, f File, part string, o Options) error {
	st, err := os.Stat(src)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%v)", st.Mode().Type())
	}
	limit := int64(maxUnknownSize)
	if f.Size > 0 {
		limit = f.Size
	}
	if st.Size() > limit {
		return fmt.Errorf("%d bytes, more than the %d bytes %s has; refused", st.Size(), limit, f.Name)
	}
	if err := checkRoom(filepath.Dir(part), st.Size()); err != nil {
		return err
	}
	r, err := os.Open(src)
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(part, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	bar := newMeter(o.Progress, f.Name, src, 0, st.Size())
	n, err := io.Copy(w, io.TeeReader(io.LimitReader(ctxReader{ctx, r}, limit+1), bar))
	bar.finish(err == nil && n <= limit)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit { // it grew while being copied
		err = fmt.Errorf("more than the %d bytes %s has; refused", limit, f.Name)
	}
	if err != nil {
		os.Remove(part)
		if ctx.Err() != nil {
			return errors.New("interrupted")
		}
		return fmt.Errorf("copying it: %w", err)
	}
	return nil
}

// ctxReader reads r until ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read reads from r unless the context has ended.
func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// unreachedError is a file that none of its sources gave: no network, not found there, or
// refused by the server. Get turns it into an *OfflineError.
type unreachedError struct{ msg string }

func (e *unreachedError) Error() string { return e.msg }

// OfflineError is Get's error for a file none of whose sources could be reached (no
// network, say); Help says where to put the files by hand, with their checksums, and
// the other ways to give them (--from, the mirror).
type OfflineError struct {
	Dataset, File string
	Err           error
	Help          string
}

// Error names the file, what each source answered, and what to do.
func (e *OfflineError) Error() string {
	return fmt.Sprintf("%s: %s: %v\n%s", e.Dataset, e.File, e.Err, e.Help)
}

// Unwrap is the sources' error.
func (e *OfflineError) Unwrap() error { return e.Err }

// placeHelp says how to give d the files it still lacks (files) without a network: where
// each goes in its folder dir and what it is checked against, then --from and the mirror.
func placeHelp(d Dataset, dir string, files []File) string {
	var b strings.Builder
	b.WriteString("Without a network, copy the file")
	if len(files) > 1 {
		b.WriteString("s")
	}
	fmt.Fprintf(&b, " from another machine or a download elsewhere:\n")
	for _, f := range files {
		what := "no checksum is published: its SHA-256 is recorded"
		if f.MD5 != "" {
			what = "MD5 " + f.MD5
		}
		if f.Size > 0 {
			what = fmt.Sprintf("%d bytes, %s", f.Size, what)
		}
		fmt.Fprintf(&b, "  %s  (%s)\n", filepath.Join(dir, f.Name), what)
	}
	fmt.Fprintf(&b, "and run pfl data get %s again, which checks ", d.Name)
	if len(files) > 1 {
		b.WriteString("them. Or:\n")
	} else {
		b.WriteString("it. Or:\n")
	}
	fmt.Fprintf(&b, "  pfl data get %s --from FILE|FOLDER|URL   takes a copy: the file, a folder holding the files, or another address\n", d.Name)
	fmt.Fprintf(&b, "  %s=FOLDER|URL   a folder or base address holding %s/<file> or <file> (another machine's data folder serves), tried first", MirrorEnv, d.Name)
	return b.String()
}

// fileNames lists the files' names.
func fileNames(files []File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name
	}
	return out
}
