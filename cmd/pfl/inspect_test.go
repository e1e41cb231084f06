package main

import (
	"bytes"
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
