package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runnableMark precedes a shell block of the docs whose commands must run as written.
const runnableMark = "<!-- runnable"

// TestDocsCommandsRun runs, in order, every command of the blocks README.md and docs/*.md
// mark runnable, as written, from a folder holding the repository's configs/, at toy
// size: PFL_DATA_TRAIN_SAMPLES, PFL_DATA_TEST_SAMPLES and PFL_TRAIN_ROUNDS shrink every
// run (a command's own PFL_* prefix and --set still apply over them, as for a user), and a
// --set train.rounds=N is run with 2 rounds. A command that fails as written fails the test:
// the docs are what a new user types.
func TestDocsCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains several small runs")
	}
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append([]string{"../../README.md"}, docs...)
	var commands []string
	for _, path := range docs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		commands = append(commands, runnableCommands(string(b))...)
	}
	if len(commands) == 0 {
		t.Fatal("no block of the docs is marked runnable")
	}
	configs, err := filepath.Abs("../../configs")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("PFL_NATIVE_LIB") == "" { // found from the working directory, which changes below
		lib, err := filepath.Abs("../../build/libpfltorch.so")
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("PFL_NATIVE_LIB", lib)
	}
	dir := t.TempDir()
	if err := os.Symlink(configs, filepath.Join(dir, "configs")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("PFL_DATA_TRAIN_SAMPLES", "1000")
	t.Setenv("PFL_DATA_TEST_SAMPLES", "400")
	t.Setenv("PFL_TRAIN_ROUNDS", "2")
	rounds := regexp.MustCompile(`train\.rounds=\d+`)
	for _, line := range commands {
		env, args := splitCommand(line)
		for i, a := range args {
			args[i] = rounds.ReplaceAllString(a, "train.rounds=2")
		}
		// a command's own variables hold for it alone; one unset before is unset again
		// (pfl refuses an empty PFL_* value)
		type was struct {
			value string
			set   bool
		}
		restore := map[string]was{}
		for k, v := range env {
			old, set := os.LookupEnv(k)
			restore[k] = was{old, set}
			os.Setenv(k, v)
		}
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		for k, w := range restore {
			if w.set {
				os.Setenv(k, w.value)
			} else {
				os.Unsetenv(k)
			}
		}
		if code != 0 {
			t.Errorf("%s: exit %d:\n%s%s", line, code, tail(out.String(), 1500), errOut.String())
		}
	}
}

// runnableCommands returns the bin/pfl commands of the shell blocks marked runnable in md,
// comments removed.
func runnableCommands(md string) []string {
	var out []string
	for {
		i := strings.Index(md, runnableMark)
		if i < 0 {
			return out
		}
		md = md[i:]
		start := strings.Index(md, "```sh\n")
		if start < 0 {
			return out
		}
		md = md[start+len("```sh\n"):]
		end := strings.Index(md, "```")
		if end < 0 {
			return out
		}
		for _, line := range strings.Split(md[:end], "\n") {
			if j := strings.Index(line, " #"); j >= 0 {
				line = line[:j]
			}
			if line = strings.TrimSpace(line); strings.Contains(line, "bin/pfl ") {
				out = append(out, line)
			}
		}
		md = md[end:]
	}
}

// splitCommand splits "A=1 bin/pfl train --set 'suite=[a, b]'" into its environment
// assignments and pfl's arguments (single quotes group, as the shell's).
func splitCommand(line string) (map[string]string, []string) {
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	env := map[string]string{}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		k, v, _ := strings.Cut(words[0], "=")
		env[k] = v
		words = words[1:]
	}
	if len(words) > 0 && strings.HasSuffix(words[0], "bin/pfl") {
		words = words[1:]
	}
	return env, words
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
