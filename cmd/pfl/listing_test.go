package main

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"

	"pfl/configs"
	"pfl/engine/fl"
)

func TestWrap(t *testing.T) {
	text := "a personal model trained on f(v) + λ/2‖v − w_global‖² beside the FedAvg model"
	for _, c := range []struct {
		name                 string
		text                 string
		width, first, indent int
		want                 []string
	}{
		{"fits", "one two", 20, 0, 0, []string{"one two"}},
		{"empty", "", 20, 4, 4, []string{""}},
		{"a label before the first line", text, 40, 14, 14, []string{
			"a personal model trained", // 26 columns after the label
			"              on f(v) + λ/2‖v −",
			"              w_global‖² beside the",
			"              FedAvg model"}},
		{"runes, not bytes, count", "αααα ββββ γγγγ", 9, 0, 0, []string{"αααα ββββ", "γγγγ"}},
		{"a word longer than a line stays whole", "short averyveryverylongword end", 10, 0, 2, []string{"short", "  averyveryverylongword", "  end"}},
		{"spaces collapse", "  a   b  ", 10, 0, 0, []string{"a b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := wrap(c.text, c.width, c.first, c.indent)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("wrap:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestAboutIsWholeSentenceOrTitle(t *testing.T) {
	long := strings.Repeat("word ", 60)
	for _, c := range []struct{ name, src, want string }{
		{"first sentence", "# FedTP's demo: a run. More detail.\n# And more.\nname: x\n", "FedTP's demo: a run."},
		{"across lines", "# A run on\n# two lines. Then.\n", "A run on two lines."},
		{"abbreviations", "# FedTP paper, Fig. 10 (§IV-C.2), Eq. 3 of Li et al. 2023. Next.\n", "FedTP paper, Fig. 10 (§IV-C.2), Eq. 3 of Li et al. 2023."},
		{"a paragraph ends it", "# No full stop\n#\n# Second paragraph.\n", "No full stop"},
		{"long: its title", "# FedTP paper, Table II, row \"FedAvg-T\": " + long + "end.\n", "FedTP paper, Table II, row \"FedAvg-T\""},
		{"a colon in brackets is no title's", "# The demo (see: here): " + long + ".\n", "The demo (see: here)"},
		{"long without a title: whole", "# " + long + "end.\n", strings.TrimSpace(long) + " end."},
		{"no comment", "name: x\n", ""},
	} {
		if got := about([]byte(c.src)); got != c.want {
			t.Errorf("%s: about = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestListingsWrapAndNameTheClosest: pfl configs, pfl algorithms and pfl -h fit 80 columns
// off a terminal and show every description whole (no "…"); an unknown algorithm or
// built-in config name gets the closest names.
func TestListingsWrapAndNameTheClosest(t *testing.T) {
	for _, args := range [][]string{{"configs"}, {"algorithms"}, {"-h"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 {
			t.Fatalf("pfl %v: exit %d: %s", args, code, errOut.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if n := len([]rune(line)); n > defaultWidth {
				t.Errorf("pfl %v: a line of %d characters: %q", args, n, line)
			}
		}
		if strings.Contains(out.String(), "…") {
			t.Errorf("pfl %v cuts a description:\n%s", args, out.String())
		}
		flat := strings.Join(strings.Fields(out.String()), " ")
		switch args[0] {
		case "algorithms":
			for _, a := range fl.Algorithms() {
				if !strings.Contains(flat, strings.Join(strings.Fields(a.Summary), " ")) || !strings.Contains(flat, strings.Join(strings.Fields(a.Paper), " ")) {
					t.Errorf("pfl algorithms lacks %s's whole summary or paper", a.Name)
				}
			}
		case "configs":
			names, _ := fs.Glob(configs.Files, "*.yaml")
			for _, n := range names {
				src, _ := configs.Files.ReadFile(n)
				if a := about(src); a == "" || !strings.Contains(flat, a) {
					t.Errorf("pfl configs lacks %s's description %q", n, a)
				}
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"algorithms", "fedavgg"}, `unknown algorithm "fedavgg" (did you mean fedavg?)`},
		{[]string{"train", "--set", "suite=[]", "--set", "algorithm.name=fetdp", "--set", "out=" + t.TempDir()}, "did you mean fedtp?"},
		{[]string{"train", "-c", "demo-fmnst", "--print-config"}, "no built-in config is named demo-fmnst either (did you mean demo-fmnist?)"},
		{[]string{"train", "-c", "quickstart-fmnist.yml", "--print-config"}, "(did you mean quickstart-fmnist?)"},
	} {
		text := pfl(t, 1, c.args...)
		if !strings.Contains(text, c.want) {
			t.Errorf("pfl %v: %s\nwant %q", c.args, text, c.want)
		}
	}
}
