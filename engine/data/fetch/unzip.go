package fetch

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// unzip unpacks the zip archive into dir: into a temporary folder first, whose top-level
// entries are renamed into dir once every file is written, so that an unpacking cut off
// leaves no partial tree in dir (an entry already there, from an unpacking cut off before
// the dataset's record was written, is replaced). An entry whose name would leave the
// folder, or that is neither a file nor a folder (a link), is refused; so is a top-level
// entry that would replace the archive or the dataset's record.
func unzip(archive, dir string) error {
	r, err := zip.OpenReader(archive)
	if err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	defer r.Close()
	tmp, err := os.MkdirTemp(dir, ".unpack-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, f := range r.File {
		name := filepath.FromSlash(strings.TrimSuffix(f.Name, "/"))
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%s: entry %q would leave the folder it is unpacked into; refused", archive, f.Name)
		}
		top, _, _ := strings.Cut(filepath.ToSlash(name), "/")
		if top == filepath.Base(archive) || top == recordFile || strings.HasPrefix(top, ".unpack-") {
			return fmt.Errorf("%s: entry %q would replace a file of pfl's; refused", archive, f.Name)
		}
		target := filepath.Join(tmp, name)
		switch {
		case f.FileInfo().IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			continue
		case !f.Mode().IsRegular():
			return fmt.Errorf("%s: entry %q is not a file or folder (%v); refused", archive, f.Name, f.Mode().Type())
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := unzipFile(f, target); err != nil {
			return fmt.Errorf("%s: %s: %w", archive, f.Name, err)
		}
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, e := range entries {
		dst := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(tmp, e.Name()), dst); err != nil {
			return err
		}
	}
	return nil
}

// unzipFile writes the archive entry f to target (the zip reader checks its CRC-32).
func unzipFile(f *zip.File, target string) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	w, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, rc)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}
