package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Snapshot reads every file under dir, by path.
func Snapshot(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// SameFiles fails t unless after holds exactly before's files with the same bytes.
func SameFiles(t testing.TB, before, after map[string][]byte) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("%d files before, %d after", len(before), len(after))
	}
	for p, b := range before {
		if !bytes.Equal(b, after[p]) {
			t.Fatalf("%s changed", p)
		}
	}
}
