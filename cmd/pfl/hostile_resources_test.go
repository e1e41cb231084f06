package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"pfl/internal/testenv"
)

// TestHostileInputIsHandled runs the command with input meant to crash it, exhaust the
// machine or lose data, and wants a clean exit whose message names the key, flag or file
// (or, where the input is legitimate, a run that completes); a finished run in the same
// folder must come out of all of it byte for byte unchanged.
func TestHostileInputIsHandled(t *testing.T) {
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
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(path, text string) func(t *testing.T, out string) {
		return func(t *testing.T, out string) {
			if b, err := os.ReadFile(path); err != nil || string(b) != text {
				t.Fatalf("%s: %q, %v; want %q kept", path, b, err, text)
			}
		}
	}
	config, err := os.ReadFile(filepath.Join(base, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	grid := filepath.Join(tmp, "grid.yaml")
	write(grid, "name: v\nout: "+tmp+"\nseeds: [1, 2]\ndata:\n  dataset: synthetic:300\n  clients: 4\ntrain:\n  rounds: 1\n  participation: 0.5\n")
	for _, c := range []struct {
		name    string
		setup   func(t *testing.T)
		args    []string
		code    int
		mention string
		check   func(t *testing.T, out string) // more to check afterwards; nil: nothing
	}{
		{"a loss too large to plot", nil, with("--set", "name=huge", "--set", "train.lr=1e6", "--set", "train.rounds=1"), 0, "run directory",
			hasFiles(filepath.Join(tmp, "huge"), "loss.png", "loss.svg", "accuracy.png", "summary.json")},
		{"maps of huge images", nil, []string{"maps", "-side", "100000", base}, 1, "-side", nil},
		{"maps of a million images", nil, []string{"maps", "-images", "1000000", base}, 1, "-images", nil},
		{"models of 100,000 blocks", nil, []string{"models", "-depth", "100000"}, 1, "-depth", nil},
		{"launch of 100,000 ranks", nil, []string{"launch", "-n", "100000", "--", "train"}, 1, "-force", nil},
		{"bench of no clients", nil, []string{"bench", "-clients", "0", "fedtp-c100-50"}, 1, "-clients 0",
			func(t *testing.T, out string) {
				if strings.Contains(out, "of 0 clients per round") {
					t.Fatalf("bench described the workload before refusing it:\n%s", out)
				}
			}},
		{"resume of a finished run", nil, []string{"train", "--resume", base}, 0, "finished", nil},
		{"overwrite of a folder pfl did not write", func(t *testing.T) { write(filepath.Join(tmp, "v", "data.txt"), "x") },
			with("--set", "name=v", "--overwrite"), 1, filepath.Join(tmp, "v", "data.txt"), kept(filepath.Join(tmp, "v", "data.txt"), "x")},
		{"overwrite of a run holding a file pfl did not write", func(t *testing.T) {
			write(filepath.Join(tmp, "w", "config.json"), string(config))
			write(filepath.Join(tmp, "w", "tb", "notes.txt"), "mine")
		}, with("--set", "name=w", "--overwrite"), 1, filepath.Join(tmp, "w", "tb", "notes.txt"), kept(filepath.Join(tmp, "w", "tb", "notes.txt"), "mine")},
		{"overwrite of a folder by a suite", nil, with("--set", "name=v", "--set", "suite=[fedavg, local]", "--overwrite"), 1,
			filepath.Join(tmp, "v", "data.txt"), kept(filepath.Join(tmp, "v", "data.txt"), "x")},
		{"overwrite of a folder by a grid", nil, []string{"train", "-c", grid, "--overwrite"}, 1,
			filepath.Join(tmp, "v", "data.txt"), kept(filepath.Join(tmp, "v", "data.txt"), "x")},
		{"resume of a run stopped before its first checkpoint", func(t *testing.T) {
			write(filepath.Join(tmp, "early", "config.json"), string(config))
			write(filepath.Join(tmp, "early", "metrics.jsonl"), "")
		}, []string{"train", "--resume", filepath.Join(tmp, "early")}, 0, "afresh",
			func(t *testing.T, _ string) {
				if _, err := os.Stat(filepath.Join(tmp, "early", "summary.json")); err != nil {
					t.Fatal(err)
				}
			}},
		{"a run resumed mid-way", func(t *testing.T) {
			if r := runPFL(t, tmp, nil, with("--set", "name=seg", "--set", "train.rounds=1")...); r.code != 0 {
				t.Fatalf("the first segment failed:\n%s", r.output)
			}
		}, []string{"train", "--resume", filepath.Join(tmp, "seg"), "--set", "train.rounds=3"}, 0, "resumed",
			func(t *testing.T, _ string) { wholeTime(t, filepath.Join(tmp, "seg")) }},
		{"a deep, narrow model beyond memory", nil, with("--set", "name=a", "--set", "model.preset=tiny-vit", "--set", "model.depth=100000",
			"--set", "model.dim=8", "--set", "model.heads=1", "--set", "model.head_dim=8", "--set", "model.mlp=8"), 1, "model.depth", noRunAt(filepath.Join(tmp, "a"))},
		{"a run that diverges", nil, with("--set", "name=nan", "--set", "train.lr=1e6", "--set", "train.rounds=4"), 0, "diverged at round",
			divergedSummary(filepath.Join(tmp, "nan"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup(t)
			}
			r := runPFL(t, tmp, nil, c.args...)
			if r.code != c.code || !strings.Contains(r.output, c.mention) {
				t.Fatalf("pfl %v: exit %d, output:\n%s\nwant exit %d and a message naming %q", c.args, r.code, r.output, c.code, c.mention)
			}
			testenv.SameFiles(t, before, testenv.Snapshot(t, base))
			if c.check != nil {
				c.check(t, r.output)
			}
		})
	}
}

// hasFiles checks that dir holds every file of names.
func hasFiles(dir string, names ...string) func(t *testing.T, out string) {
	return func(t *testing.T, _ string) {
		for _, f := range names {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
	}
}

// divergedSummary checks the summary.json of the run in dir that diverged: it diverged at
// the round after the rounds it reports.
func divergedSummary(dir string) func(t *testing.T, out string) {
	return func(t *testing.T, _ string) {
		var s struct {
			Rounds   int `json:"rounds"`
			Diverged int `json:"diverged_at_round"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil || s.Diverged != s.Rounds+1 || s.Diverged < 1 {
			t.Fatalf("summary.json of the diverged run: %+v, %v (%s)", s, err, b)
		}
	}
}

// alive reports whether process pid still runs: it exists and is not a zombie (a rank
// whose launcher died is reparented, and its new parent may be slow to reap it).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// the state follows the command name, which is in parentheses
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestLaunchedRanksDieWithTheLauncher kills pfl launch with SIGKILL (it can forward
// nothing) while its ranks are inside a long round, printing nothing (a rank that prints
// to its dead launcher dies of SIGPIPE anyway), and wants every rank gone within seconds.
func TestLaunchedRanksDieWithTheLauncher(t *testing.T) {
	tmp := t.TempDir()
	// rounds of tens of seconds (2 clients × 1,500 images × 20 epochs on one thread each)
	cmd := exec.Command(os.Args[0], "launch", "-n", "2", "--", "train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml"),
		"--set", "data.dataset=synthetic:6000", "--set", "data.clients=4", "--set", "train.rounds=1000", "--set", "train.epochs=20",
		"--set", "train.participation=0.5", "--set", "out="+tmp, "--set", "name=orphans", "--set", "train.eval_every=0")
	cmd.Env = append(childEnvironment(t), "OMP_NUM_THREADS=1")
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pidRE := regexp.MustCompile(`^\[rank (\d)\] pid (\d+)$`)
	var pids []int
	var log strings.Builder
	sc := bufio.NewScanner(pipe)
	// rank 0's last line before its first round: the ranks train from here on
	for sc.Scan() {
		l := sc.Text()
		log.WriteString(l + "\n")
		if m := pidRE.FindStringSubmatch(l); m != nil {
			pid, _ := strconv.Atoi(m[2])
			pids = append(pids, pid)
		}
		if strings.HasPrefix(l, "[rank 0] cpu: ") {
			break
		}
	}
	if len(pids) != 2 {
		t.Fatalf("want the pids of 2 ranks; output:\n%s", log.String())
	}
	for _, pid := range pids {
		defer syscall.Kill(pid, syscall.SIGKILL) // whatever the test finds, leave nothing running
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("rank pid %d still runs 5 s after its launcher was killed; output:\n%s", pid, log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// wholeTime fails t unless the summary of the run in dir counts every round: its wall time
// at least the rounds' own times summed over metrics.jsonl (every segment), its throughput
// all the rounds' samples over that time.
func wholeTime(t *testing.T, dir string) {
	t.Helper()
	var s struct {
		Wall float64 `json:"wall_seconds"`
		SPS  float64 `json:"samples_per_sec"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rounds, samples float64
	for _, l := range strings.Split(strings.TrimSpace(string(m)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		f := func(k string) float64 { v, _ := r[k].(float64); return v }
		rounds += f("time_data_s") + f("time_train_s") + f("time_aggregate_s") + f("time_eval_s")
		samples += f("samples")
	}
	if s.Wall < rounds {
		t.Fatalf("wall_seconds %g, less than the %g s its rounds took: a segment is missing", s.Wall, rounds)
	}
	if got := s.SPS * s.Wall; got < 0.999*samples || got > 1.001*samples {
		t.Fatalf("samples_per_sec %g × wall_seconds %g = %g samples, want all %g", s.SPS, s.Wall, got, samples)
	}
}

// noRunAt fails a check when the refused run left dir behind.
func noRunAt(dir string) func(t *testing.T, out string) {
	return func(t *testing.T, _ string) {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("the refused run left %s behind (%v)", dir, err)
		}
	}
}

// TestActivationsBeyondTheAddressSpaceAreRefused runs a model whose training steps cannot
// fit under ulimit -v (785 tokens: 112-pixel images in 4-pixel patches) and
// wants it refused before its directory is created, naming the limit and the keys, from
// probes of a sample or two (the whole batch is never tried).
func TestActivationsBeyondTheAddressSpaceAreRefused(t *testing.T) {
	tmp := t.TempDir()
	args := []string{"train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml"), "--set", "data.dataset=synthetic:300",
		"--set", "data.clients=4", "--set", "train.rounds=1", "--set", "train.participation=0.5", "--set", "out=" + tmp,
		"--set", "name=big", "--set", "model.preset=tiny-vit", "--set", "data.image_size=112"}
	cmd := exec.Command("sh", append([]string{"-c", `ulimit -v 6000000 && exec "$0" "$@"`, os.Args[0]}, args...)...)
	cmd.Env = childEnvironment(t)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("pfl died of %v:\n%s", ws.Signal(), out)
	}
	text := string(out)
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(text, "ulimit -v") || !strings.Contains(text, "train.batch") ||
		!strings.Contains(text, "data.image_size") || strings.Contains(text, "panic:") {
		t.Fatalf("exit %d; want 1 and a refusal naming ulimit -v, train.batch and data.image_size:\n%s", cmd.ProcessState.ExitCode(), text)
	}
	if _, err := os.Stat(filepath.Join(tmp, "big")); !os.IsNotExist(err) {
		t.Fatalf("the refused run left its directory (%v)", err)
	}
}

// TestSignalDuringSetUpStopsIt sends SIGTERM while a deep model is being built (thousands
// of small parameters in each of the run's copies take seconds) and wants the set-up to
// stop within seconds, saying so, with no run directory created.
func TestSignalDuringSetUpStopsIt(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml"),
		"--set", "data.dataset=synthetic:300", "--set", "data.clients=4", "--set", "train.rounds=1", "--set", "train.participation=0.5",
		"--set", "out="+tmp, "--set", "name=deep", "--set", "model.preset=tiny-vit", "--set", "model.depth=5000", "--set", "model.dim=8",
		"--set", "model.heads=1", "--set", "model.head_dim=8", "--set", "model.mlp=8", "--set", "train.batch=4")
	cmd.Env = childEnvironment(t)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// the run takes its lock before the set-up: from then on it is setting up
	lock := filepath.Join(tmp, ".deep.lock")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(lock); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lock in a minute:\n%s", out.String())
		}
	}
	// into the models' construction, which takes several seconds from about a second on
	// (engine/fl's TestNewStopsBetweenModels checks each model's turn exactly)
	time.Sleep(2500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("set-up still running 30 s after SIGTERM:\n%s", out.String())
	}
	took := time.Since(signalled)
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(out.String(), "interrupted while") {
		t.Fatalf("exit %d after SIGTERM during set-up; want 1 and an interruption:\n%s", cmd.ProcessState.ExitCode(), out.String())
	}
	if _, err := os.Stat(filepath.Join(tmp, "deep")); !os.IsNotExist(err) {
		t.Fatalf("the stopped set-up created the run's directory (%v):\n%s", err, out.String())
	}
	if took > 10*time.Second {
		t.Fatalf("set-up stopped %v after SIGTERM, want seconds:\n%s", took, out.String())
	}
	t.Logf("set-up stopped %v after SIGTERM: %s", took.Round(time.Millisecond), strings.TrimSpace(out.String()))
}
