package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"pfl/configs"
	"pfl/engine/config"
)

// TestConfigsByName: `-c NAME` finds a built-in config from any directory, with or without
// .yaml; a file of that name in the current directory wins; a name that is neither is an
// error pointing at `pfl configs`; `pfl configs` lists every built-in config.
func TestConfigsByName(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, name := range []string{"quickstart-fmnist", "quickstart-fmnist.yaml"} {
		cfg, err := loadConfig(name, nil)
		if err != nil || cfg.Name != "quickstart-fmnist" {
			t.Errorf("-c %s from %s: name %q, error %v; want the built-in quickstart-fmnist", name, dir, cfg.Name, err)
		}
	}
	if err := os.WriteFile("quickstart-fmnist.yaml", []byte("name: mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err := loadConfig("quickstart-fmnist.yaml", nil); err != nil || cfg.Name != "mine" {
		t.Errorf("-c quickstart-fmnist.yaml with such a file here: name %q, error %v; want the file's (mine)", cfg.Name, err)
	}
	if _, err := loadConfig("no-such-config", nil); err == nil || !strings.Contains(err.Error(), "pfl configs") {
		t.Errorf("-c no-such-config: error %v; want one naming pfl configs", err)
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"configs"}, &out, &errOut); code != 0 {
		t.Fatalf("pfl configs: exit %d: %s", code, errOut.String())
	}
	names, err := fs.Glob(configs.Files, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	for _, n := range names {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(strings.TrimSuffix(n, ".yaml")) + `\s`).MatchString(out.String()) {
			t.Errorf("pfl configs does not list %s:\n%s", n, out.String())
		}
	}
	if !strings.Contains(out.String(), strings.TrimSuffix(configs.Demo, ".yaml")+" (default)") {
		t.Errorf("pfl configs does not mark the default %s", configs.Demo)
	}
}

// TestPrintConfigNamesSources: --print-config prints every key with the source that gave
// its value last: the file, a PFL_* variable, a --set, or the default.
func TestPrintConfigNamesSources(t *testing.T) {
	t.Setenv("PFL_TRAIN_LR", "0.02")
	var out, errOut bytes.Buffer
	code := run([]string{"train", "-c", "../../configs/quickstart-fmnist.yaml", "--set", "train.rounds=3", "--print-config"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^train\.rounds: 3\s+# --set train\.rounds=3$`),
		regexp.MustCompile(`(?m)^train\.lr: 0\.02\s+# environment variable PFL_TRAIN_LR$`),
		regexp.MustCompile(`(?m)^model\.preset: "convnet"\s+# config \(\.\./\.\./configs/quickstart-fmnist\.yaml\)$`),
		regexp.MustCompile(`(?m)^train\.tail_rounds: \d+\s+# default$`),
	}
	for _, re := range want {
		if !re.MatchString(out.String()) {
			t.Errorf("--print-config lacks a line matching %s:\n%s", re, out.String())
		}
	}
	fields := len(config.Keys())
	if lines := strings.Count(out.String(), "\n"); lines != fields {
		t.Errorf("--print-config printed %d lines for %d keys", lines, fields)
	}
}

// TestDryRunWritesNothing: --dry-run prepares and times every suite member and writes no
// file, not even the run directory's parent.
func TestDryRunWritesNothing(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "runs")
	var stdout, errOut bytes.Buffer
	code := run([]string{"train", "--dry-run", "--set", "data.dataset=synthetic:300", "--set", "data.clients=5",
		"--set", "train.participation=0.4", "--set", "model.patch=8", "--set", "suite=[fedtp, fedavg]", "--set", "out=" + out}, &stdout, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), errOut.String())
	}
	for _, want := range []string{"[1/2] fedtp", "[2/2] fedavg", "projected wall time of the whole experiment", "memory: at least"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, stdout.String())
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("dry run wrote %s (stat: %v)", out, err)
	}
	// a config error is found without preparing anything
	code = run([]string{"train", "--dry-run", "--set", "train.participation=2", "--set", "out=" + out}, &stdout, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "participation") {
		t.Errorf("dry run of train.participation=2: exit %d, %s", code, errOut.String())
	}
}

// TestPrintConfigShowsEachRun: --print-config of a suite or grid marks the keys its members
// or sweep set (the default algorithm.name is no run's), and details each member and sweep
// point: the keys it sets, with its run's values, and the keys that follow from them. A
// run of seeds alone gets no section; a grid of more sections than it details counts the
// rest; a malformed member is an error naming it.
func TestPrintConfigShowsEachRun(t *testing.T) {
	pointsOf := func(n int) string {
		var v []string
		for i := range n {
			v = append(v, fmt.Sprint(i+1))
		}
		return "[" + strings.Join(v, ", ") + "]"
	}
	for _, c := range []struct {
		name, config string
		code         int
		want         []string // regular expressions, each matching a line
		sections     int
	}{
		{"a suite", `suite: [fedavg, "big: algorithm.name=fedper; train.lr=0.2"]`, 0, []string{
			`^algorithm\.name: "fedavg"\s+# default; every suite member sets its own \(below\)$`,
			`^train\.lr: 0\.01\s+# default; suite member big sets its own \(below\)$`,
			`^# suite member fedavg: .*/c/fedavg$`, `^# suite member big: .*/c/big$`,
			`^algorithm\.name: "fedper"\s+# suite member big$`, `^train\.lr: 0\.2\s+# suite member big$`,
		}, 2},
		{"a grid", "seeds: [1, 2]\nsuite: [fedavg, local]\nsweep:\n  train.lr: [0.1, 0.3]", 0, []string{
			`^train\.lr: 0\.01\s+# default; the sweep sets it \(below\)$`,
			`^# sweep point train\.lr=0\.3, suite member local: .*/c/train\.lr=0\.3/local/seed-<s> for seeds 1, 2$`,
			`^train\.lr: 0\.3\s+# sweep point train\.lr=0\.3$`, `^algorithm\.name: "local"\s+# suite member local$`, `^novel\.lr: 0\.3\s+# resolved$`,
		}, 4},
		{"seeds alone", "seeds: [1, 2]", 0, nil, 0},
		{"more points than shown", "sweep:\n  train.lr: " + pointsOf(9) + "\n  train.epochs: " + pointsOf(9), 0, []string{
			fmt.Sprintf(`^# … %d more runs \(sweep points × suite members\) not shown$`, 81-maxRunSections),
		}, maxRunSections},
		{"a malformed member", `suite: [fedavg, "x: train.roundz=3"]`, 1, []string{`suite member x: .*train\.roundz`}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeConfig(t, "name: c\nout: "+t.TempDir()+"\n"+c.config+"\n")
			var out, errOut bytes.Buffer
			if code := run([]string{"train", "-c", path, "--print-config"}, &out, &errOut); code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errOut.String())
			}
			text := out.String() + errOut.String()
			for _, w := range c.want {
				if !regexp.MustCompile(`(?m)` + w).MatchString(text) {
					t.Errorf("no line matches %s:\n%s", w, text)
				}
			}
			if n := len(regexp.MustCompile(`(?m)^# (suite member|sweep point) `).FindAllString(text, -1)); n != c.sections {
				t.Errorf("%d sections, want %d:\n%s", n, c.sections, text)
			}
		})
	}
}
