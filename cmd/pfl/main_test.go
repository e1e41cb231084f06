package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/configs"
)

func TestCLI(t *testing.T) {
	tmp := t.TempDir()
	cases := []struct {
		args    []string
		code    int
		mention string
	}{
		{nil, 2, "Usage"},
		{[]string{"help"}, 0, "doctor"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"smoke", "-steps"}, 2, "flag needs an argument"},
		{[]string{"smoke", "-device", "gpu"}, 1, "want cpu, cuda or cuda:N"},
		{[]string{"smoke", "-steps", "0"}, 1, "steps"},
		{[]string{"doctor", "extra"}, 2, "unexpected arguments"},
		{[]string{"doctor"}, 0, "torch:"},
		{[]string{"smoke", "-steps", "60"}, 0, "ok"},
		{[]string{"models"}, 0, "21,704,164"},
		{[]string{"models", "-classes", "10"}, 0, "1,988,490"},
		{[]string{"partition", "-data", "synthetic:600", "-clients", "7", "-out", tmp}, 0, "7 clients"},
		{[]string{"partition", "-data", "synthetic", "-method", "pathological", "-k", "11", "-out", tmp}, 1, "classes per client"},
		{[]string{"partition", "-data", "imagenet"}, 1, "unknown dataset"},
		{[]string{"partition", "-c", "a.yaml", "-clients", "3"}, 1, "drop -clients"},
		{[]string{"partition", "--set", "seed=2"}, 1, "give the config with -c"},
		{[]string{"train", "--set", "train.roundz=2"}, 1, "--set train.roundz=2: no config key train.roundz"},
		{[]string{"train", "--set", "rounds"}, 1, "want key=value"},
		{[]string{"train", "-c", "/nonexistent.yaml"}, 1, "nonexistent.yaml"},
		{[]string{"train", "--resume", "/nonexistent-run"}, 1, "config.json"},
		{[]string{"plot"}, 2, "usage: pfl plot"},
		{[]string{"plot", "/nonexistent-run"}, 1, "metrics.jsonl"},
		{[]string{"train", "--resume", "x", "-c", "a.yaml"}, 1, "drop -c"},
		{[]string{"train", "-c", "../../configs/quickstart-fmnist.yaml", "--set", "data.dataset=synthetic:300", "--set", "data.clients=4", "--set", "train.rounds=1",
			"--set", "train.participation=0.5", "--set", "out=" + tmp}, 0, "run directory"},
		// the embedded demo (a suite of five algorithms), shrunk to synthetic 32×32 images
		{[]string{"train", "--set", "data.dataset=synthetic:300", "--set", "data.clients=5", "--set", "train.rounds=1",
			"--set", "train.participation=0.4", "--set", "model.patch=8", "--set", "out=" + tmp}, 0, "| fedtp |"},
		{[]string{"plot", "-out", tmp + "/compare.svg", tmp + "/quickstart-fmnist"}, 0, "wrote"},
		{[]string{"eval", "-clients", tmp + "/quickstart-fmnist"}, 0, "client   3"},
		{[]string{"eval"}, 2, "usage: pfl eval"},
		{[]string{"maps"}, 2, "usage: pfl maps"},
		{[]string{"maps", "-images", "0", tmp + "/demo-fmnist"}, 1, "-images"},
		{[]string{"maps", "-clients", "0,x", tmp + "/demo-fmnist"}, 1, "-clients"},
		{[]string{"maps", tmp + "/quickstart-fmnist"}, 1, "neither attention nor focal modulation"},
		{[]string{"maps", "-images", "2", "-clients", "0,4", tmp + "/demo-fmnist"}, 0, "maps/client4.png"},
		{[]string{"tsne", tmp + "/demo-fmnist"}, 0, "fedtp/embeddings_tsne.png"},
		{[]string{"tsne", tmp + "/quickstart-fmnist"}, 1, "embeddings.csv"},
		{[]string{"report"}, 2, "usage: pfl report"},
		{[]string{"report", tmp + "/demo-fmnist"}, 0, "demo-fmnist/fedtp/report.html"},
		{[]string{"report", tmp + "/quickstart-fmnist"}, 0, "quickstart-fmnist/report.html"},
		{[]string{"report", tmp + "/quickstart-fmnist"}, 0, "neither attention nor focal modulation"}, // a ConvNet: no maps, said
		{[]string{"report", "-maps=false", tmp + "/quickstart-fmnist"}, 0, "quickstart-fmnist/report.html"},
		{[]string{"report", tmp + "/none"}, 1, "config.json"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		text := out.String() + errOut.String()
		if code != c.code || !strings.Contains(text, c.mention) {
			t.Errorf("pfl %v: exit %d, output %q; want exit %d mentioning %q", c.args, code, text, c.code, c.mention)
		}
	}
}

func TestEveryPresetDecodesAndValidates(t *testing.T) {
	entries, err := configs.Files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		cfg, err := loadConfig(filepath.Join("../../configs", e.Name()), nil)
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		cfg = cfg.Resolved()
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
	}
	if len(entries) < 5 {
		t.Fatalf("only %d presets embedded", len(entries))
	}
}

// TestAlgorithmDocListsTheRegistry keeps docs/algorithms.md's algorithm table equal to the registry.
func TestAlgorithmDocListsTheRegistry(t *testing.T) {
	b, err := os.ReadFile("../../docs/algorithms.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- algorithms -->\n")
	table, _, ok2 := strings.Cut(rest, "<!-- /algorithms -->")
	if !ok || !ok2 {
		t.Fatal("docs/algorithms.md lacks the <!-- algorithms --> table")
	}
	if want := algorithmTable(); table != want {
		t.Fatalf("docs/algorithms.md's algorithm table differs from the registry (regenerate it with pfl algorithms -markdown):\n got:\n%s\nwant:\n%s", table, want)
	}
}

// TestReportDrawsMissingMaps: pfl report of a ViT run without maps draws them first (the
// page then shows them); with -maps=false it leaves the run without.
func TestReportDrawsMissingMaps(t *testing.T) {
	tmp := t.TempDir()
	train := func(name string) string {
		var out, errOut bytes.Buffer
		args := []string{"train", "--set", "data.dataset=synthetic:300", "--set", "data.clients=4", "--set", "train.rounds=1",
			"--set", "train.participation=0.5", "--set", "suite=[]", "--set", "data.partition=iid", "--set", "algorithm.name=fedavg", "--set", "model.preset=tiny-vit",
			"--set", "model.depth=1", "--set", "model.patch=8", "--set", "model.dim=16", "--set", "model.heads=2", "--set", "model.head_dim=8",
			"--set", "model.mlp=16", "--set", "out=" + tmp, "--set", "name=" + name}
		if code := run(args, &out, &errOut); code != 0 {
			t.Fatalf("pfl %v: exit %d\n%s%s", args, code, out.String(), errOut.String())
		}
		return filepath.Join(tmp, name)
	}
	for _, c := range []struct {
		flags []string
		maps  bool
	}{{nil, true}, {[]string{"-maps=false"}, false}} {
		dir := train(fmt.Sprintf("maps-%v", c.maps))
		var out, errOut bytes.Buffer
		if code := run(append(append([]string{"report"}, c.flags...), dir), &out, &errOut); code != 0 {
			t.Fatalf("pfl report %v: exit %d\n%s%s", c.flags, code, out.String(), errOut.String())
		}
		_, err := os.Stat(filepath.Join(dir, "maps", "maps.json"))
		page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
		if (err == nil) != c.maps || strings.Contains(string(page), "rollout") != c.maps {
			t.Errorf("pfl report %v: maps.json %v, page mentions rollout %v; want maps %v", c.flags, err, strings.Contains(string(page), "rollout"), c.maps)
		}
	}
}
