package main

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/internal/testenv"
)

// TestResumeWithMoreRounds: pfl train --resume DIR --set train.rounds=N extends a finished
// suite and a finished grid (seeds) as it extends a run: every run's metrics then equal
// those of the same suite or grid trained to N rounds from the start. Any other --set, and
// fewer rounds than done (of a run too), are refused naming the key (and the rounds done),
// leaving the directories byte for byte as they were.
func TestResumeWithMoreRounds(t *testing.T) {
	tmp := t.TempDir()
	small := []string{"train", "-c", "../../configs/quickstart-fmnist.yaml", "--set", "data.dataset=synthetic:300", "--set", "data.clients=4",
		"--set", "train.participation=0.5", "--set", "train.eval_every=1", "--set", "suite=[fedavg, local]", "--set", "out=" + tmp}
	experiment := func(name string, rounds string, extra ...string) []string {
		return append(append(append([]string{}, small...), "--set", "name="+name, "--set", "train.rounds="+rounds), extra...)
	}
	for _, args := range [][]string{experiment("r", "2", "--set", "suite=[]"), experiment("s", "2"), experiment("s3", "3"),
		experiment("g", "2", "--set", "seeds=[1, 2]"), experiment("g3", "3", "--set", "seeds=[1, 2]")} {
		pfl(t, 0, args...)
	}
	single, suite, grid := filepath.Join(tmp, "r"), filepath.Join(tmp, "s"), filepath.Join(tmp, "g")
	before := map[string]map[string][]byte{single: testenv.Snapshot(t, single), suite: testenv.Snapshot(t, suite), grid: testenv.Snapshot(t, grid)}
	for _, c := range []struct {
		name    string
		args    []string
		code    int
		mention string
	}{
		{"fewer rounds than done", []string{"--resume", suite, "--set", "train.rounds=1"}, 1,
			"train.rounds = 1: suite member fedavg (" + filepath.Join(suite, "fedavg") + ") has done 2 rounds"},
		{"fewer rounds than done, a run", []string{"--resume", single, "--set", "train.rounds=1"}, 1,
			"train.rounds = 1: the run (" + single + ") has done 2 rounds"},
		{"fewer rounds than done, a grid", []string{"--resume", grid, "--set", "train.rounds=1"}, 1, "suite member fedavg, seed 1"},
		{"a cadence key of a suite", []string{"--resume", suite, "--set", "train.eval_every=2"}, 1,
			"--set train.eval_every=2: train.eval_every cannot change when a suite is resumed; --resume of a suite takes --set of train.rounds only"},
		{"a key of the runs of a grid", []string{"--resume", grid, "--set", "train.rounds=3", "--set", "data.clients=3"}, 1,
			"--set data.clients=3: data.clients cannot change when a grid (seeds or sweep) is resumed"},
		{"no such key", []string{"--resume", suite, "--set", "train.roundz=3"}, 1, "no config key train.roundz"},
		{"no rounds", []string{"--resume", grid, "--set", "train.rounds=0"}, 1, "train.rounds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if out := pfl(t, c.code, append([]string{"train"}, c.args...)...); !strings.Contains(out, c.mention) {
				t.Errorf("output lacks %q:\n%s", c.mention, out)
			}
			for dir, files := range before {
				if now := testenv.Snapshot(t, dir); !maps.EqualFunc(now, files, func(a, b []byte) bool { return string(a) == string(b) }) {
					t.Errorf("the refused resume changed %s", dir)
				}
			}
		})
	}
	for _, c := range []struct{ dir, want string }{{suite, filepath.Join(tmp, "s3")}, {grid, filepath.Join(tmp, "g3")}} {
		out := pfl(t, 0, "train", "--resume", c.dir, "--set", "train.rounds=3")
		runs := runDirs(t, c.want)
		if strings.Count(out, "after round 2") != len(runs) {
			t.Errorf("pfl train --resume %s --set train.rounds=3 did not resume its %d runs after round 2:\n%s", c.dir, len(runs), out)
		}
		for _, r := range runs {
			got, want := roundLines(t, filepath.Join(c.dir, r)), roundLines(t, filepath.Join(c.want, r))
			if len(got) != 3 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s extended to 3 rounds:\n%s\ntrained to 3 at once:\n%s", r, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		if out := pfl(t, 0, "train", "--resume", c.dir); strings.Count(out, "before") != len(runs) {
			t.Errorf("resuming the extended %s again trained more:\n%s", c.dir, out)
		}
	}
}

// runDirs lists the run directories under the suite or grid in dir (those holding a
// metrics.jsonl), relative to it.
func runDirs(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "metrics.jsonl" {
			rel, _ := filepath.Rel(dir, filepath.Dir(p))
			out = append(out, rel)
		}
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("no runs under %s (%v)", dir, err)
	}
	return out
}

// roundLines are the run's metrics.jsonl lines without their wall-clock fields (time_*),
// each as sorted JSON.
func roundLines(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		maps.DeleteFunc(m, func(k string, _ any) bool { return strings.HasPrefix(k, "time_") })
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return out
}
