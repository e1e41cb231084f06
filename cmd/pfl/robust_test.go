package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"pfl/cuda"
	"pfl/internal/testenv"
)

// childEnv makes the test binary act as the pfl command (TestMain), so that each
// reproduction runs in its own process: a panic or a fatal signal shows as such.
const childEnv = "PFL_TEST_AS_PFL"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// pflResult is what one pfl process did.
type pflResult struct {
	code   int
	output string
}

// runPFL runs the command in a child process with extra environment variables. The
// context's deadline only keeps a hang from stopping the suite: it is far above the
// seconds these commands take, and a command that reaches it is reported as a hang.
func runPFL(t *testing.T, dir string, env []string, args ...string) pflResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(childEnvironment(t), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := out.String()
	if ctx.Err() != nil {
		t.Fatalf("pfl %v hung (killed at the deadline); output:\n%s", args, text)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("pfl %v: %v", args, err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("pfl %v died of %v; output:\n%s", args, ws.Signal(), text)
	}
	if strings.Contains(text, "panic:") || strings.Contains(text, "goroutine ") {
		t.Fatalf("pfl %v panicked:\n%s", args, text)
	}
	return pflResult{cmd.ProcessState.ExitCode(), text}
}

// TestBadInputIsAClearError runs the command with every kind of bad input we know of and
// wants a clean exit whose message names the key, flag or file; a finished run in the same
// folder must come out of all of it byte for byte unchanged.
func TestBadInputIsAClearError(t *testing.T) {
	tmp := t.TempDir()
	small := []string{"--set", "data.dataset=synthetic:300", "--set", "data.clients=4", "--set", "train.rounds=2",
		"--set", "train.participation=0.5", "--set", "train.eval_every=1", "--set", "out=" + tmp}
	quick := append([]string{"train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml")}, small...)
	with := func(extra ...string) []string { return append(append([]string{}, quick...), extra...) }
	if r := runPFL(t, tmp, nil, with("--set", "name=base")...); r.code != 0 {
		t.Fatalf("the reference run failed:\n%s", r.output)
	}
	base := filepath.Join(tmp, "base")
	before := testenv.Snapshot(t, base)
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fraction := write("fraction.yaml", "train:\n  rounds: 3.7\n")
	empty := write("empty.yaml", "# only a comment\n")
	for _, c := range []struct {
		name    string
		env     []string
		args    []string
		code    int
		mention string
	}{
		{"model too small for the images", nil, with("--set", "name=a", "--set", "data.image_size=8"), 1, "data.image_size"},
		{"1×1 images", nil, with("--set", "name=a", "--set", "data.image_size=1"), 1, "data.image_size"},
		{"a size key the preset lacks", nil, with("--set", "name=a", "--set", "model.dim=1000000000"), 1, "model.dim"},
		{"a model beyond memory", nil, with("--set", "name=a", "--set", "model.preset=tiny-vit", "--set", "model.dim=100000"), 1, "GiB"},
		{"an absurd width", nil, with("--set", "name=a", "--set", "model.preset=tiny-vit", "--set", "model.dim=1000000"), 1, "model.dim"},
		{"a hypernetwork beyond memory", nil, with("--set", "name=a", "--set", "model.preset=tiny-vit", "--set", "algorithm.name=fedtp",
			"--set", "algorithm.hyper.hidden=100000000"), 1, "GiB"},
		{"a deep model beyond memory", nil, with("--set", "name=a", "--set", "model.preset=tiny-vit", "--set", "model.depth=100000"), 1, "GiB"},
		{"the name of a finished run", nil, with("--set", "name=base"), 1, "already holds a run"},
		{"resume with another seed", nil, []string{"train", "--resume", base, "--set", "seed=5"}, 1, "seed"},
		{"rounds 0", nil, with("--set", "name=a", "--set", "train.rounds=0"), 1, "train.rounds"},
		{"negative depth", nil, with("--set", "name=a", "--set", "model.preset=tiny-vit", "--set", "model.depth=-3"), 1, "model.depth"},
		{"negative samples", nil, with("--set", "name=a", "--set", "data.train_samples=-5"), 1, "data.train_samples"},
		{"negative tail", nil, with("--set", "name=a", "--set", "train.tail_rounds=-5"), 1, "train.tail_rounds"},
		{"negative min size", nil, with("--set", "name=a", "--set", "data.min_size=-3"), 1, "data.min_size"},
		{"negative checkpoint cadence", nil, with("--set", "name=a", "--set", "train.checkpoint_every=-1"), 1, "train.checkpoint_every"},
		{"negative weight decay", nil, with("--set", "name=a", "--set", "train.weight_decay=-1"), 1, "train.weight_decay"},
		{"negative eval cadence", nil, with("--set", "name=a", "--set", "train.eval_every=-1"), 1, "train.eval_every"},
		{"participation 0", nil, with("--set", "name=a", "--set", "train.participation=0"), 1, "train.participation: 0,"},
		{"infinite lr", nil, with("--set", "name=a", "--set", "train.lr=Inf"), 1, "train.lr"},
		{"a misspelt environment key", []string{"PFL_TRAIN_ROUDNS=3"}, with("--set", "name=a"), 1, "PFL_TRAIN_ROUDNS"},
		{"a fractional count in YAML", nil, []string{"train", "-c", fraction}, 1, "train.rounds"},
		{"an empty config", nil, []string{"train", "-c", empty}, 1, empty},
		{"a dataset of zero images", nil, with("--set", "name=a", "--set", "data.dataset=synthetic:0"), 1, "synthetic"},
		{"huge -classes", nil, []string{"models", "-classes", "9223372036854775807"}, 1, "-classes"},
		{"huge --threads", nil, []string{"doctor", "--threads", "100000"}, 1, "--threads"},
		{"NaN noise", nil, []string{"partition", "-data", "synthetic:300", "-noise", "NaN", "-out", filepath.Join(tmp, "p")}, 1, "-noise"},
		{"eval of no run", nil, []string{"eval", filepath.Join(tmp, "none")}, 1, filepath.Join(tmp, "none")},
		{"eval -h", nil, []string{"eval", "-h"}, 0, "-clients"},
		{"plot -h", nil, []string{"plot", "-h"}, 0, "-out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runPFL(t, tmp, c.env, c.args...)
			if r.code != c.code || !strings.Contains(r.output, c.mention) {
				t.Fatalf("pfl %v: exit %d, output:\n%s\nwant exit %d and a message naming %q", c.args, r.code, r.output, c.code, c.mention)
			}
			testenv.SameFiles(t, before, testenv.Snapshot(t, base))
			if _, err := os.Stat(filepath.Join(tmp, "a")); err == nil {
				t.Fatalf("the refused run left %s behind", filepath.Join(tmp, "a"))
			}
		})
	}
}

// TestDivergedRunKeepsItsState: a run whose loss becomes NaN ends as "diverged at round N"
// (exit 0: a result), after saving the last good state in files that hold the non-finite
// values; resuming it does nothing; with --stop-on-divergence the same run is an error
// naming the clients and where the last good state is.
func TestDivergedRunKeepsItsState(t *testing.T) {
	tmp := t.TempDir()
	args := []string{"train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml"),
		"--set", "data.dataset=synthetic:300", "--set", "data.clients=4", "--set", "train.rounds=4",
		"--set", "train.participation=0.5", "--set", "train.eval_every=1", "--set", "out=" + tmp, "--set", "train.lr=1e6"}
	r := runPFL(t, tmp, nil, append(args, "--set", "name=nan")...)
	if r.code != 0 || !strings.Contains(r.output, "diverged at round") || !strings.Contains(r.output, "not finite") {
		t.Fatalf("exit %d:\n%s", r.code, r.output)
	}
	for _, f := range []string{"checkpoint.safetensors", "config.json", "metrics.jsonl", "summary.json", "accuracy.png", "loss.png"} {
		if _, err := os.Stat(filepath.Join(tmp, "nan", f)); err != nil {
			t.Error(err)
		}
	}
	if e := runPFL(t, tmp, nil, "eval", filepath.Join(tmp, "nan")); e.code != 0 {
		t.Fatalf("eval of the saved state: exit %d\n%s", e.code, e.output)
	}
	before := testenv.Snapshot(t, filepath.Join(tmp, "nan"))
	if e := runPFL(t, tmp, nil, "train", "--resume", filepath.Join(tmp, "nan")); e.code != 0 || !strings.Contains(e.output, "nothing to do") {
		t.Fatalf("resume of the diverged run: exit %d\n%s", e.code, e.output)
	}
	testenv.SameFiles(t, before, testenv.Snapshot(t, filepath.Join(tmp, "nan")))
	s := runPFL(t, tmp, nil, append(args, "--set", "name=stop", "--stop-on-divergence")...)
	if s.code != 1 || !strings.Contains(s.output, "not finite") || !strings.Contains(s.output, "saved in") {
		t.Fatalf("--stop-on-divergence: exit %d:\n%s", s.code, s.output)
	}
}

// TestEnvironmentSetsAnyKey: PFL_* variables set keys the config file does not name.
func TestEnvironmentSetsAnyKey(t *testing.T) {
	tmp := t.TempDir()
	r := runPFL(t, tmp, []string{"PFL_TRAIN_EAGER=true", "PFL_TRAIN_PRECISION=bf16", "PFL_TRAIN_ROUNDS=1"},
		"train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml"), "--set", "data.dataset=synthetic:300",
		"--set", "data.clients=4", "--set", "train.participation=0.5", "--set", "out="+tmp, "--set", "name=env")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.output)
	}
	b, _ := os.ReadFile(filepath.Join(tmp, "env", "config.json"))
	for _, want := range []string{`"eager": true`, `"precision": "bf16"`, `"rounds": 1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config.json lacks %s", want)
		}
	}
}

// TestSecondSignalStopsAtOnce: the first SIGINT asks for a checkpoint after the round, the
// second ends the process without waiting; the checkpoint on disk stays whole.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml"),
		// rounds of seconds (2 clients × 1,200 images × 3 epochs): the second signal lands
		// while the second round is still running
		"--set", "data.dataset=synthetic:6000", "--set", "data.clients=4", "--set", "train.rounds=1000", "--set", "train.epochs=3",
		"--set", "train.participation=0.5", "--set", "out="+tmp, "--set", "name=sig", "--set", "train.eval_every=0")
	cmd.Env = childEnvironment(t)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen bytes.Buffer
	buf := make([]byte, 4096)
	signalled := 0
	for {
		n, err := stdout.Read(buf)
		seen.Write(buf[:n])
		// after the first round's line, interrupt; after the acknowledgement, interrupt again
		if signalled == 0 && strings.Contains(seen.String(), "round 1/") {
			cmd.Process.Signal(os.Interrupt)
			signalled++
		}
		if signalled == 1 && strings.Contains(seen.String(), "send it again") {
			cmd.Process.Signal(os.Interrupt)
			signalled++
		}
		if err != nil {
			break
		}
	}
	cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("pfl did not stop; output:\n%s", seen.String())
	}
	if signalled != 2 || cmd.ProcessState.ExitCode() != 130 || !strings.Contains(seen.String(), "stopping now") {
		t.Fatalf("%d signals sent, exit %d, want 2 and 130; output:\n%s", signalled, cmd.ProcessState.ExitCode(), seen.String())
	}
}

// childEnvironment is this process's environment for a child pfl running in another
// folder: it names the native library this process loaded.
func childEnvironment(t *testing.T) []string {
	t.Helper()
	info, err := cuda.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), childEnv+"=1", "PFL_NATIVE_LIB="+info.LibraryPath)
}

func wd(t *testing.T) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
