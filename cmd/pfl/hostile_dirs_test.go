package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"pfl/internal/testenv"
)

// TestRunDirectoriesAndKeysAreGuarded runs the command where a run would replace what pfl
// did not write (a file or a link where the run folder goes, a finished run without its
// checkpoint, a suite's member resumed alone), with values it used to accept and ignore
// (--set of the run's own keys on resume, keys no run reads, an empty --resume, a partition
// file with more after its object) or mishandle (a config file without end, a megabyte
// note, a batch no client fills, a name too long for a lock file), and wants a clean exit
// whose message names the key, flag or file. The files pfl did not write (and a finished
// run and suite beside them) must come out of every case byte for byte unchanged, and no
// case may leave a lock file or a refused run's directory.
func TestRunDirectoriesAndKeysAreGuarded(t *testing.T) {
	g := newGuarded(t)
	for _, c := range g.cases(t) {
		t.Run(c.name, func(t *testing.T) { g.check(t, c) })
	}
}

// guarded is TestRunDirectoriesAndKeysAreGuarded's folder: a finished run (base) and suite
// (suite) beside the cases' files, base's files before any case, and what the cases build
// their commands and files with.
type guarded struct {
	tmp, base, suite string
	before           map[string][]byte
	at               func(rel string) string
	write            func(rel, text string)
	copyRun          func(from, to string)
	with             func(extra ...string) []string
	fromFile         func(rel string) []string
	indexFile        []byte
}

// guardCase is one case: what it sets up, the command, its exit and message, the paths
// (under tmp) pfl did not write that must stay unchanged, and more to check (nil: none).
type guardCase struct {
	name    string
	setup   func()
	args    []string
	code    int
	mention string
	keep    []string
	check   func(t *testing.T, out string)
}

// newGuarded runs the reference run and suite in a fresh folder.
func newGuarded(t *testing.T) *guarded {
	tmp := t.TempDir()
	small := []string{"--set", "data.dataset=synthetic:300", "--set", "data.clients=4", "--set", "train.rounds=2",
		"--set", "train.participation=0.5", "--set", "train.eval_every=1", "--set", "out=" + tmp}
	quick := append([]string{"train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml")}, small...)
	with := func(extra ...string) []string { return append(append([]string{}, quick...), extra...) }
	for _, name := range []string{"base", "s"} {
		args := with("--set", "name="+name)
		if name == "s" {
			args = with("--set", "name=s", "--set", "suite=[fedavg, local]", "--set", "train.rounds=1")
		}
		if r := runPFL(t, tmp, nil, args...); r.code != 0 {
			t.Fatalf("the reference run %s failed:\n%s", name, r.output)
		}
	}
	base, suite := filepath.Join(tmp, "base"), filepath.Join(tmp, "s")
	before := testenv.Snapshot(t, base)
	at := func(rel string) string { return filepath.Join(tmp, rel) }
	write := func(rel, text string) {
		if err := os.MkdirAll(filepath.Dir(at(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(at(rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyRun := func(from, to string) {
		if err := os.CopyFS(at(to), os.DirFS(from)); err != nil {
			t.Fatal(err)
		}
	}
	partition := at("partition.json")
	writeIndexFile(t, partition)
	indexFile, err := os.ReadFile(partition)
	if err != nil {
		t.Fatal(err)
	}
	fromFile := func(rel string) []string {
		return with("--set", "name=a", "--set", "data.dataset=synthetic:400:10:100", "--set", "data.partition=file",
			"--set", "data.partition_file="+at(rel))
	}
	return &guarded{tmp: tmp, base: base, suite: suite, before: before, at: at, write: write, copyRun: copyRun,
		with: with, fromFile: fromFile, indexFile: indexFile}
}

// cases are the commands the test runs, each in a subtest.
func (g *guarded) cases(t *testing.T) []guardCase {
	tmp, base, suite, at, write, copyRun, with, fromFile, indexFile := g.tmp, g.base, g.suite, g.at, g.write, g.copyRun, g.with, g.fromFile, g.indexFile
	long := strings.Repeat("n", 300)
	return []guardCase{
		// only what pfl wrote is replaced, and only with --overwrite
		{"a file where the run folder goes", func() { write("x/qs", "notes") },
			with("--set", "out="+at("x"), "--set", "name=qs"), 1, at("x/qs") + " is a file", []string{"x"}, nil},
		{"a file where the run folder goes, --overwrite", nil,
			with("--set", "out="+at("x"), "--set", "name=qs", "--overwrite"), 1, at("x/qs") + " is a file", []string{"x"}, nil},
		{"a file where a suite goes, --overwrite", nil,
			with("--set", "out="+at("x"), "--set", "name=qs", "--set", "suite=[fedavg, local]", "--overwrite"), 1, at("x/qs") + " is a file", []string{"x"}, nil},
		{"a link where the run folder goes, --overwrite", func() {
			write("linked/notes.txt", "mine")
			if err := os.Symlink(at("linked"), at("ln")); err != nil {
				t.Fatal(err)
			}
		}, with("--set", "name=ln", "--overwrite"), 1, at("ln") + " is a symbolic link", []string{"linked"}, isLink(at("ln"))},
		{"a folder pfl did not write", func() { write("y/data.txt", "x") },
			with("--set", "name=y"), 1, at("y/data.txt") + ", which pfl did not write", []string{"y"}, nil},
		// a finished run that lost its checkpoint is not "stopped before its first checkpoint"
		{"resume of a finished run without its checkpoint", func() {
			copyRun(base, "lost")
			os.Remove(at("lost/checkpoint.safetensors"))
		}, []string{"train", "--resume", at("lost")}, 1, "records rounds done (2 line(s) of metrics.jsonl, summary.json)", []string{"lost"}, nil},
		{"resume of a suite whose member lost its checkpoint", func() {
			copyRun(suite, "lost-suite")
			os.Remove(at("lost-suite/fedavg/checkpoint.safetensors"))
		}, []string{"train", "--resume", at("lost-suite")}, 1, "records rounds done", []string{"lost-suite"}, nil},
		// a suite's member is resumed with its suite
		{"resume of a suite's member", nil, []string{"train", "--resume", filepath.Join(suite, "fedavg"), "--set", "train.rounds=3"}, 1,
			"continue them together with: pfl train --resume " + suite, []string{"s"},
			func(t *testing.T, _ string) {
				if r := runPFL(t, tmp, nil, "train", "--resume", suite); r.code != 0 {
					t.Fatalf("the suite does not resume after its member was refused:\n%s", r.output)
				}
			}},
		// the keys a resume takes, and the keys no run reads
		{"resume with another name", nil, []string{"train", "--resume", base, "--set", "name=zz"}, 1, "--set name=zz: name cannot change", nil, nil},
		{"resume with another out", nil, []string{"train", "--resume", base, "--set", "out=" + at("zz")}, 1, "out cannot change", nil, noRunAt(at("zz"))},
		{"resume with fewer clients", nil, []string{"train", "--resume", base, "--set", "data.clients=3"}, 1, "--set data.clients=3: data.clients cannot change", nil, nil},
		{"an empty --resume", nil, []string{"train", "--resume", ""}, 1, "--resume: empty", nil, noRunAt(at("runs"))},
		{"an empty -c", nil, []string{"train", "-c", "", "--set", "out=" + tmp}, 1, "-c: empty", nil, noRunAt(at("demo-fmnist"))},
		{"pfedme's key with fedper", nil, with("--set", "name=a", "--set", "algorithm.pfedme.lambda=3"), 1,
			"algorithm.pfedme.lambda: --set algorithm.pfedme.lambda=3, but algorithm fedper does not read it (only pfedme does)", nil, nil},
		{"fedbabu's key with fedper", nil, with("--set", "name=a", "--set", "algorithm.fedbabu.fine_tune_epochs=3"), 1,
			"algorithm.fedbabu.fine_tune_epochs: --set algorithm.fedbabu.fine_tune_epochs=3, but algorithm fedper does not read it", nil, nil},
		{"local's key with fedper", nil, with("--set", "name=a", "--set", "algorithm.local_clients=sampled"), 1,
			"algorithm.local_clients: --set algorithm.local_clients=sampled, but algorithm fedper does not read it (only local does)", nil, nil},
		{"a partition file with trailing text", func() { write("trailing.json", string(indexFile)+"\ngarbage") },
			fromFile("trailing.json"), 1, at("trailing.json") + ": more after its JSON object", []string{"trailing.json"}, nil},
		{"a partition file of two objects", func() { write("two.json", string(indexFile)+string(indexFile)) },
			fromFile("two.json"), 1, at("two.json") + ": more after its JSON object", []string{"two.json"}, nil},
		// resources: what is read, and what is printed
		{"a config without end", nil, []string{"train", "-c", "/dev/zero", "--print-config"}, 1, "/dev/zero: larger than 4 MiB", nil, nil},
		{"a megabyte note", func() { write("note.yaml", "note: "+strings.Repeat("a", 1<<20)+"\ntrain:\n  rounds: 2\n") },
			[]string{"train", "-c", at("note.yaml"), "--print-config"}, 0, "(1048578 bytes in all)", []string{"note.yaml"},
			func(t *testing.T, out string) {
				if len(out) > 64<<10 {
					t.Fatalf("--print-config wrote %d bytes for a config of a megabyte's note", len(out))
				}
			}},
		// local training that takes no step
		{"drop_last with a batch beyond every client", nil, with("--set", "name=a", "--set", "train.drop_last=true", "--set", "train.batch=100"), 1,
			"no training client holds that many (the largest holds 91)", nil, nil},
		{"drop_last with perfedavg's two batches", nil, with("--set", "name=a", "--set", "train.drop_last=true", "--set", "train.batch=50",
			"--set", "algorithm.name=perfedavg"), 1, "whole steps of 100 samples (2 batches of train.batch 50, algorithm perfedavg)", nil, nil},
		{"drop_last with a client short of a batch", nil, with("--set", "name=dl", "--set", "train.drop_last=true", "--set", "train.batch=50"), 0,
			"warning: train.drop_last: 1 of the 4 training clients hold fewer than the 50 samples", nil, nil},
		// messages that name the key
		{"a hold-out of nearly every client", nil, with("--set", "name=a", "--set", "data.holdout=0.99"), 1, "data.holdout: 0.99 holds out 4 of the 4 clients", nil, nil},
		{"a name too long for its lock file, dry run", nil, with("--set", "name="+long, "--dry-run"), 1, "name: 300 bytes", nil, nil},
		{"a name too long for its lock file", nil, with("--set", "name="+long), 1, "name: 300 bytes", nil, nil},
		{"a name with a line break", nil, with("--set", "name=a\nb"), 1, `name: "a\nb" has a control character`, nil, noRunAt(at("a\nb"))},
	}
}

// check runs case c and checks its exit, its message, the files kept, and that it left no
// lock file and no refused run's directory.
func (g *guarded) check(t *testing.T, c guardCase) {
	tmp, base, before, at := g.tmp, g.base, g.before, g.at
	if c.setup != nil {
		c.setup()
	}
	kept := map[string]map[string][]byte{}
	for _, p := range c.keep {
		kept[p] = testenv.Snapshot(t, at(p))
	}
	r := runPFL(t, tmp, nil, c.args...)
	if r.code != c.code || !strings.Contains(r.output, c.mention) {
		t.Fatalf("pfl %q: exit %d, output:\n%.3000s\nwant exit %d and a message naming %q", c.args, r.code, r.output, c.code, c.mention)
	}
	for _, p := range c.keep {
		testenv.SameFiles(t, kept[p], testenv.Snapshot(t, at(p)))
	}
	testenv.SameFiles(t, before, testenv.Snapshot(t, base))
	if c.check != nil {
		c.check(t, r.output)
	}
	noLocks(t, tmp)
	if _, err := os.Stat(at("a")); err == nil {
		t.Fatalf("the refused run left %s behind", at("a"))
	}
}

// writeIndexFile writes a valid partition file at path for 4 clients of
// synthetic:400:10:100: 100 training and 25 test images each, in stored order.
func writeIndexFile(t *testing.T, path string) {
	t.Helper()
	var train, test [][]int
	for c := range 4 {
		train, test = append(train, nil), append(test, nil)
		for i := range 100 {
			train[c] = append(train[c], c*100+i)
		}
		for i := range 25 {
			test[c] = append(test[c], c*25+i)
		}
	}
	b, err := json.Marshal(map[string][][]int{"train": train, "test": test})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// isLink checks that path is still a symbolic link.
func isLink(path string) func(t *testing.T, out string) {
	return func(t *testing.T, _ string) {
		if st, err := os.Lstat(path); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a link (%v)", path, err)
		}
	}
}

// noLocks fails t if a run lock file (.<name>.lock) is left anywhere under dir: a run,
// finished, failed or refused, removes its own.
func noLocks(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".") && strings.HasSuffix(d.Name(), ".lock") {
			t.Fatalf("a lock file is left behind: %s", p)
		}
		return err
	})
}

// TestPrintConfigEndsOnSIGTERM: --print-config writes nothing, so it installs no handler
// that would turn a signal into "stop after the round": SIGTERM while it waits for its
// config (a FIFO nobody writes) ends it at once.
func TestPrintConfigEndsOnSIGTERM(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "config.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "train", "-c", fifo, "--print-config")
	cmd.Env = childEnvironment(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	time.Sleep(500 * time.Millisecond) // into the open of the FIFO
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("--print-config still runs 10 s after SIGTERM")
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("--print-config ended with %v, want ended by SIGTERM", cmd.ProcessState)
	}
}
