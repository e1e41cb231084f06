package rundir

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFailedStartIsOnlySetUp: a directory holding only pfl's set-up files (no round, no
// checkpoint) is a failed start; a round done, a checkpoint, a summary, a file pfl does not
// write, or a member lock a live process holds keeps it.
func TestFailedStartIsOnlySetUp(t *testing.T) {
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setUp := func() string {
		dir := filepath.Join(t.TempDir(), "suite")
		write(filepath.Join(dir, "config.json"), "{}")
		write(filepath.Join(dir, ".fedtp.lock"), "")
		write(filepath.Join(dir, "fedtp", "config.json"), "{}")
		write(filepath.Join(dir, "fedtp", "partition.json"), "{}")
		write(filepath.Join(dir, "fedtp", "partition.png"), "png")
		write(filepath.Join(dir, "fedtp", "machine.json"), "[]")
		write(filepath.Join(dir, "fedtp", "metrics.jsonl"), "")
		write(filepath.Join(dir, "fedtp", TBDir, "events.out.tfevents.1.host"), "header")
		write(filepath.Join(dir, "fedtp", ".summary.json.tmp123"), "")
		return dir
	}
	if dir := setUp(); !FailedStart(dir) {
		t.Fatal("set-up files only: not taken for a failed start")
	}
	for what, edit := range map[string]func(dir string){
		"a round done":         func(dir string) { write(filepath.Join(dir, "fedtp", "metrics.jsonl"), `{"round":0}`+"\n") },
		"a checkpoint":         func(dir string) { write(filepath.Join(dir, "fedtp", CheckpointFile), "") },
		"a summary":            func(dir string) { write(filepath.Join(dir, "fedavg", "summary.json"), "{}") },
		"a file of the user's": func(dir string) { write(filepath.Join(dir, "notes.txt"), "mine") },
		"a link": func(dir string) {
			if err := os.Symlink("/etc/hostname", filepath.Join(dir, "config.json.link")); err != nil {
				t.Fatal(err)
			}
		},
	} {
		dir := setUp()
		edit(dir)
		if FailedStart(dir) {
			t.Errorf("%s: taken for a failed start", what)
		}
	}
	// a member's lock held by a live process (another start of the same suite, setting up)
	dir := setUp()
	f, err := os.Open(filepath.Join(dir, ".fedtp.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if FailedStart(dir) {
		t.Error("a held member lock: taken for a failed start")
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if !FailedStart(dir) {
		t.Error("a released member lock: not taken for a failed start")
	}
}
