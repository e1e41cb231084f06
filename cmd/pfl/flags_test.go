package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseFlagsAnywhere: flags may follow, precede or sit between positional arguments;
// "--" ends the flags (what follows is positional even when it begins with "-"), unless it
// is a flag's value.
func TestParseFlagsAnywhere(t *testing.T) {
	cases := []struct {
		args []string
		pos  []string
		n    int
		out  string
		v    bool
	}{
		{[]string{"a", "-n", "3", "b"}, []string{"a", "b"}, 3, "", false},
		{[]string{"-n", "3", "a", "b", "-out", "f.png"}, []string{"a", "b"}, 3, "f.png", false},
		{[]string{"a", "-v", "--", "-b", "-n", "4"}, []string{"a", "-b", "-n", "4"}, 0, "", true},
		{[]string{"-out", "--", "a"}, []string{"a"}, 0, "--", false}, // "--" as -out's value
		{[]string{"--", "-n"}, []string{"-n"}, 0, "", false},
		{[]string{"a", "--n=5", "-v=false", "b"}, []string{"a", "b"}, 5, "", false},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		n := fs.Int("n", 0, "")
		out := fs.String("out", "", "")
		v := fs.Bool("v", false, "")
		pos, err := parseFlags(fs, c.args)
		if err != nil || !slices.Equal(pos, c.pos) || *n != c.n || *out != c.out || *v != c.v {
			t.Errorf("%q: positional %q, -n %d, -out %q, -v %v, err %v; want %q, %d, %q, %v", c.args, pos, *n, *out, *v, err, c.pos, c.n, c.out, c.v)
		}
	}
}

// TestEveryCommandTakesFlagsAnywhere runs every subcommand's -h (which must name its
// positional arguments) and the README's forms with flags after the positional arguments,
// which used to print the usage (exit 2) or read a flag as a run directory.
func TestEveryCommandTakesFlagsAnywhere(t *testing.T) {
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "none")
	// a run as plot reads it: one evaluated round
	curve := filepath.Join(tmp, "curve")
	if err := os.MkdirAll(curve, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(curve, "metrics.jsonl"), []byte(`{"round":0,"clients":[0],"train_loss":1,"samples":4,"accuracy":0.5}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(tmp, "f.png")
	cases := []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"doctor", "-h"}, 0, "Usage: pfl doctor [flags]"},
		{[]string{"smoke", "-h"}, 0, "Usage: pfl smoke [flags]"},
		{[]string{"models", "-h"}, 0, "Usage: pfl models [flags]"},
		{[]string{"algorithms", "-h"}, 0, "Usage: pfl algorithms [flags]"},
		{[]string{"partition", "-h"}, 0, "Usage: pfl partition [flags]"},
		{[]string{"train", "-h"}, 0, "Usage: pfl train [-c config.yaml|name]"},
		{[]string{"eval", "-h"}, 0, "Usage: pfl eval [-clients] <run, suite or grid dir>"},
		{[]string{"plot", "-h"}, 0, "Usage: pfl plot [-out file.png] [-label NAME]... <run, suite or grid dir>..."},
		{[]string{"maps", "-h"}, 0, "<run, suite or grid dir>"},
		{[]string{"tsne", "-h"}, 0, "Usage: pfl tsne <run, suite or grid dir>"},
		{[]string{"report", "-h"}, 0, "Usage: pfl report [-maps=false] <run, suite or grid dir>"},
		{[]string{"launch", "-h"}, 0, "-- <pfl command and flags>"},
		{[]string{"bench", "-h"}, 0, "usage: pfl bench [flags] <workload>"},
		{[]string{"data", "-h"}, 0, "Usage: pfl data list | get <name>... | dir"},
		{[]string{"data", "-h"}, 0, "get <name> --from FILE|FOLDER|URL"},
		{[]string{"export", "-h"}, 0, "Usage: pfl export [-kind rounds|clients|summary] [-out FILE.csv] <run, suite or grid dir>..."},
		// flags after the positional arguments, as the README writes them
		{[]string{"eval", missing, "-clients"}, 1, "config.json"},
		{[]string{"maps", missing, "-images", "2", "-clients", "0,3"}, 1, "config.json"},
		{[]string{"report", missing, "-maps=false"}, 1, "config.json"},
		{[]string{"export", missing, "-kind", "rounds"}, 1, "config.json"},
		{[]string{"plot", curve, "-out", png}, 0, "wrote " + png},
		{[]string{"plot", "-out", png, curve, "--", "-dash"}, 1, filepath.Join("-dash", "metrics.jsonl")},
		{[]string{"tsne", missing, "-nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"partition", "-clients", "3", "extra"}, 2, "unexpected arguments: [extra]"},
		{[]string{"eval", missing, "other"}, 2, "usage: pfl eval"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		text := out.String() + errOut.String()
		if code != c.code || !strings.Contains(text, c.mention) {
			t.Errorf("pfl %q: exit %d, output %q; want exit %d mentioning %q", c.args, code, text, c.code, c.mention)
		}
	}
}
