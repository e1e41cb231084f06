package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"pfl/engine/experiment"
)

func TestSetTakesLists(t *testing.T) {
	cfg, err := loadConfig("../../configs/fedtp-shakespeare.yaml", []string{"suite=[fedavg, fedprox,fedper]", "model.preset=lstm", "model.depth=null", "train.rounds=7"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Suite, []string{"fedavg", "fedprox", "fedper"}) || cfg.Model.Preset != "lstm" || cfg.Train.Rounds != 7 {
		t.Fatalf("suite %q, preset %q, rounds %d", cfg.Suite, cfg.Model.Preset, cfg.Train.Rounds)
	}
	cfg = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestSetListItemsMayBeQuoted: a quoted list item is one item without its quotes, whatever
// commas, brackets or semicolons it holds (a member with settings used to keep its quotes
// and fail to decode, "cannot unmarshal string into model.prefix.mid"); engine/config's
// TestParseText holds the grammar itself.
func TestSetListItemsMayBeQuoted(t *testing.T) {
	cfg, err := loadConfig("../../configs/study-fedperfix-fmnist.yaml", []string{`suite=[fedavg, "p32: algorithm.name=fedperfix; model.prefix.mid=32"]`})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"fedavg", "p32: algorithm.name=fedperfix; model.prefix.mid=32"}; !slices.Equal(cfg.Suite, want) {
		t.Fatalf("suite %q, want %q", cfg.Suite, want)
	}
	cfg.Seeds = []uint64{1}
	if err := experiment.CheckGrid(cfg); err != nil {
		t.Fatal(err)
	}
}

// TestSuiteFromTheCommandLineKeepsMembersSettings: a member the command line names keeps
// the settings the file gave it (the demo's transfed its FocalNet; it used to run as a
// plain transfed on the demo's ViT, which needs a FocalNet), and a new name is a plain
// algorithm.
func TestSuiteFromTheCommandLineKeepsMembersSettings(t *testing.T) {
	file, err := loadConfig("", nil) // the embedded demo
	if err != nil {
		t.Fatal(err)
	}
	var transfed string
	for _, m := range file.Suite {
		if strings.HasPrefix(m, "transfed:") {
			transfed = m
		}
	}
	if !strings.Contains(transfed, "model.preset=focalnet-cifar") {
		t.Fatalf("the demo's suite %q has no transfed member with a FocalNet", file.Suite)
	}
	for _, sets := range [][]string{{"suite=[transfed, fedavg, fedprox]"}, {"suite=[transfed,fedavg,fedprox]", "train.rounds=3"}} {
		cfg, err := loadConfig("", sets)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{transfed, "fedavg", "fedprox"}; !slices.Equal(cfg.Suite, want) {
			t.Fatalf("--set %q: suite %q, want %q", sets, cfg.Suite, want)
		}
		cfg.Seeds = []uint64{1} // CheckGrid builds and validates every member
		if err := experiment.CheckGrid(cfg); err != nil {
			t.Fatalf("--set %q: %v", sets, err)
		}
	}
	t.Setenv("PFL_SUITE", "[transfed]")
	if cfg, err := loadConfig("", nil); err != nil || !slices.Equal(cfg.Suite, []string{transfed}) {
		t.Fatalf("PFL_SUITE=[transfed]: suite %q, %v", cfg.Suite, err)
	}
}

// TestSetOfAKeyEveryMemberSetsIsRefused: a value from --set or the environment for a key
// that every suite member sets, or that the sweep sets, is refused naming suite (or the
// sweep): no run would use it (pfl train --set algorithm.name=__none__ ran the demo's five
// algorithms, never checking the name).
func TestSetOfAKeyEveryMemberSetsIsRefused(t *testing.T) {
	members := writeConfig(t, `suite: ["a: algorithm.name=fedavg; train.lr=0.1", "b: algorithm.name=local; train.lr=0.2", "fedprox"]
`)
	swept := writeConfig(t, "sweep:\n  data.alpha: [0.1, 0.5]\n")
	for _, c := range []struct {
		path    string
		sets    []string
		env     string
		mention string // "" accepted
	}{
		{"", []string{"algorithm.name=__none__"}, "", "--set algorithm.name=__none__: every member of the suite sets algorithm.name (suite: fedtp, fedperfix, transfed, fedavg, local)"},
		{"", nil, "PFL_ALGORITHM_NAME=fedavg", "environment variable PFL_ALGORITHM_NAME: every member of the suite sets algorithm.name"},
		{"", []string{"suite=[fedavg, local]", "algorithm.name=fedprox"}, "", "--set 'suite=[]'"},
		{"", []string{"suite=[]", "algorithm.name=fedavg"}, "", ""},
		{"", []string{"model.dim=32"}, "", ""}, // the demo's transfed sets model.dim, the others do not
		{members, []string{"train.lr=0.5"}, "", ""},
		{members, []string{"suite=[a, b]", "train.lr=0.5"}, "", "every member of the suite sets train.lr (suite: a, b)"},
		{members, []string{"train.rounds=3"}, "", ""},
		{swept, []string{"data.alpha=0.3"}, "", "--set data.alpha=0.3: the sweep sets data.alpha (to 0.1, 0.5 in turn)"},
		{swept, []string{"data.clients=4"}, "", ""},
		{writeConfig(t, "algorithm: {name: fedavg}\nsuite: [local]\n"), nil, "", ""}, // the file's own choice
	} {
		if c.env != "" {
			name, val, _ := strings.Cut(c.env, "=")
			t.Setenv(name, val)
		}
		_, err := loadConfig(c.path, c.sets)
		if c.env != "" {
			os.Unsetenv(strings.Split(c.env, "=")[0])
		}
		switch {
		case c.mention == "" && err != nil:
			t.Errorf("%s %q %s: %v", c.path, c.sets, c.env, err)
		case c.mention != "" && (err == nil || !strings.Contains(err.Error(), c.mention)):
			t.Errorf("%s %q %s: %v; want an error mentioning %q", c.path, c.sets, c.env, err, c.mention)
		}
	}
	// the command refuses it before anything runs
	var out, errOut bytes.Buffer
	if code := run([]string{"train", "--set", "algorithm.name=__none__", "--set", "out=" + t.TempDir()}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "suite") {
		t.Errorf("pfl train --set algorithm.name=__none__: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
