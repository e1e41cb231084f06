// Package atomicfile writes files so that a reader (or a process killed mid-write) never
// sees a partial file: the bytes go to a temporary file in the same directory, which is
// synced and then renamed over the destination.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates path atomically with the bytes fill writes. On any error the temporary
// file is removed and path is left as it was.
func Write(path string, fill func(io.Writer) error) error {
	return WriteHooked(path, fill, nil)
}

// WriteHooked is Write that calls beforeRename (when not nil) once the temporary file is
// complete and synced, just before it replaces path: the point where a process killed
// must leave the old file in place (tests stop there).
func WriteHooked(path string, fill func(io.Writer) error, beforeRename func()) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close() // may already be closed; the error that matters is err
			os.Remove(tmp.Name())
			err = fmt.Errorf("%s: %w", path, err)
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := fill(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	// CreateTemp makes the file private; these are ordinary readable files. Sync before
	// the rename so a crash cannot leave a renamed but empty file.
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if beforeRename != nil {
		beforeRename()
	}
	return os.Rename(tmp.Name(), path)
}

// WriteBytes creates path atomically holding b.
func WriteBytes(path string, b []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
