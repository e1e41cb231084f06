package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// distConfig is a toy run every algorithm of the tests takes: six clients of synthetic
// 3×32×32 images, three sampled per round, a ViT of width 8 (FedTP generates its Q/K/V).
const distConfig = `name: dist
device: cpu
seed: 1
data:
  dataset: synthetic:400:10:100
  clients: 6
  min_size: 5
  partition: dirichlet
  alpha: 0.5
model:
  preset: tiny-vit
  depth: 2
  patch: 16
  dim: 8
  heads: 2
  head_dim: 4
  mlp: 8
algorithm:
  name: fedavg
  hyper:
    lr: 0.5
train:
  rounds: 3
  participation: 0.5
  epochs: 1
  batch: 16
  lr: 0.05
  momentum: 0.9
  eval_every: 1
  tail_rounds: 1
  checkpoint_every: 1
`

// distLine is what the tests compare of a metrics.jsonl line.
type distLine struct {
	Round     int       `json:"round"`
	Clients   []int     `json:"clients"`
	TrainLoss float64   `json:"train_loss"`
	Samples   int       `json:"samples"`
	Accuracy  float64   `json:"accuracy"`
	PerClient []float64 `json:"per_client"`
}

func readMetrics(t *testing.T, dir string) []distLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []distLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l distLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		out = append(out, l)
	}
	return out
}

// Tolerances of a run across processes against the same run in one process.
//
// Every rank draws the same clients and batches, and the tiny ViT's stacked ops (batched
// matmuls, per-row norms) compute each client's row alike whatever the stack's size, so a
// client trained in a stack of 1, 2 or 3 rows gets the same bits. (Not every model does:
// the ConvNet's stacked convolutions round differently for different stack sizes, see
// bench/RESULTS.md, and its round 0 would need the tolerance of the later rounds.) The sums over clients are what changes: the server's weighted sum
// Σ_k w_k θ_k (float32) is one left-to-right sum in one process and per-rank partial sums
// added by Gloo across processes. Each is within γ_{K−1} Σ_k w_k|θ_k| ≤ (K−1)u·max|θ| of
// the exact sum (Higham, Accuracy and Stability of Numerical Algorithms, §4.2; u = 2^−24,
// Σ w_k = 1), so the two differ by at most 2(K−1)u = 2.4e-7 relative for K = 3; FedTP's
// hypernetwork gradient, also a sum over the K clients, likewise. Round 0 starts from the
// same model in both, and its training loss (a float64 sum of per-step losses, regrouped by
// rank) may differ by n·2^−53 relative for its n ≤ 100 terms: lossTol0. Later rounds train
// from the perturbed model, and local SGD carries the perturbation on, growing by at most
// (1 + ηL) per step for an L-smooth loss; with η = 0.05 and a few steps per round we allow
// it to grow 40-fold over the test's rounds (the differences measured on these runs are
// about 3e-8 relative, below the bound itself): lossTol. The accuracies count predictions:
// a perturbation of 1e-5 flips none unless a test sample's top two logits are that close,
// so they are compared exactly (a flip would show as a failure naming the client).
const (
	lossTol0 = 100 * 0x1p-53
	lossTol  = 40 * 2 * 2 * 0x1p-24
)

// sameMetrics compares the metrics of a run across processes (got) with those of one
// process (want) within the tolerances above.
func sameMetrics(t *testing.T, what string, got, want []distLine) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rounds, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		tol := lossTol
		if w.Round == 1 { // the first round
			tol = lossTol0
		}
		switch {
		case g.Round != w.Round || !slices.Equal(g.Clients, w.Clients) || g.Samples != w.Samples:
			t.Errorf("%s round %d: clients %v (%d samples), want %v (%d)", what, w.Round, g.Clients, g.Samples, w.Clients, w.Samples)
		case math.Abs(g.TrainLoss-w.TrainLoss) > tol*math.Abs(w.TrainLoss):
			t.Errorf("%s round %d: train loss %.17g, want %.17g (relative tolerance %.2g)", what, w.Round, g.TrainLoss, w.TrainLoss, tol)
		case g.Accuracy != w.Accuracy || !slices.Equal(g.PerClient, w.PerClient):
			t.Errorf("%s round %d: accuracy %v per client %v, want %v %v", what, w.Round, g.Accuracy, g.PerClient, w.Accuracy, w.PerClient)
		}
	}
}

// distRun runs pfl train with the toy config (and sets) in one process (n = 1) or across
// n processes started by pfl launch, and returns its metrics.
func distRun(t *testing.T, out, cfg string, n int, sets ...string) []distLine {
	t.Helper()
	args := []string{"train", "-c", cfg, "--set", "out=" + out}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	if n > 1 { // -force: three ranks on a machine of two CPUs are slow, not wrong
		args = append([]string{"launch", "-force", "-n", strconv.Itoa(n), "--"}, args...)
	}
	r := runPFL(t, out, nil, args...)
	if r.code != 0 {
		t.Fatalf("pfl %v: exit %d\n%s", args, r.code, r.output)
	}
	return readMetrics(t, filepath.Join(out, nameOf(sets)))
}

func nameOf(sets []string) string {
	for _, s := range sets {
		if v, ok := strings.CutPrefix(s, "name="); ok {
			return v
		}
	}
	return "dist"
}

func writeDistConfig(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "dist.yaml")
	if err := os.WriteFile(p, []byte(distConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAcrossProcessesMatchesOneProcess trains the toy run of each algorithm in one
// process and across 2 and 3 Gloo ranks on loopback (pfl launch), and compares every
// round's metrics: FedAvg (shared parameters averaged), FedTP (the hypernetwork's update
// all-reduced), FedPer (a personal head kept in the replicated store), Ditto (a whole
// personal model beside the shared one), pFedMe (personal models, and a server step of
// β towards the all-reduced mean) and FedPerfix (prefix adapters kept by their clients,
// under its own evaluation protocol, which evaluates the trained clients before
// aggregation on the ranks that trained them).
func TestAcrossProcessesMatchesOneProcess(t *testing.T) {
	for _, alg := range []string{"fedavg", "fedtp", "fedper", "ditto", "pfedme", "fedperfix"} {
		t.Run(alg, func(t *testing.T) {
			out := t.TempDir()
			cfg := writeDistConfig(t, out)
			sets := []string{"algorithm.name=" + alg}
			switch alg {
			case "pfedme":
				sets = append(sets, "algorithm.pfedme.beta=0.9") // the server step, not the plain mean
			case "fedperfix": // its protocol: the trained clients are evaluated before aggregation
				sets = append(sets, "model.prefix.mid=4", "train.eval_protocol=fedperfix")
			}
			want := distRun(t, out, cfg, 1, append(sets, "name=one")...)
			for _, n := range []int{2, 3} {
				got := distRun(t, out, cfg, n, append(sets, fmt.Sprintf("name=n%d", n))...)
				sameMetrics(t, fmt.Sprintf("%s on %d ranks", alg, n), got, want)
				if _, err := os.Stat(filepath.Join(out, fmt.Sprintf("n%d", n), "summary.json")); err != nil {
					t.Errorf("rank 0 wrote no summary: %v", err)
				}
			}
		})
	}
}

// TestAcrossProcessesRefusesWhatItCannotSplit wants a clear error, before any training,
// for what is not split across processes yet (clients trained one at a time, FedTP's
// novel-client study) and for a malformed environment variable.
func TestAcrossProcessesRefusesWhatItCannotSplit(t *testing.T) {
	out := t.TempDir()
	cfg := writeDistConfig(t, out)
	r := runPFL(t, out, nil, "launch", "-n", "2", "--", "train", "-c", cfg, "--set", "out="+out,
		"--set", "train.sequential=true")
	if r.code == 0 || !strings.Contains(r.output, "train.sequential") || !strings.Contains(r.output, "WORLD_SIZE=1") {
		t.Fatalf("clients trained one at a time across 2 processes: exit %d\n%s", r.code, r.output)
	}
	r = runPFL(t, out, nil, "launch", "-n", "2", "--", "train", "-c", cfg, "--set", "out="+out,
		"--set", "algorithm.name=fedtp", "--set", "data.holdout=0.34")
	if r.code == 0 || !strings.Contains(r.output, "novel clients") {
		t.Fatalf("the novel-client study across 2 processes: exit %d\n%s", r.code, r.output)
	}
	r = runPFL(t, out, []string{"WORLD_SIZE=2", "RANK=0", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=http"}, "train", "-c", cfg)
	if r.code == 0 || !strings.Contains(r.output, "MASTER_PORT") {
		t.Fatalf("a bad MASTER_PORT: exit %d\n%s", r.code, r.output)
	}
	r = runPFL(t, out, []string{"WORLD_SIZE=2", "RANK=0", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500", "GLOO_SOCKET_IFNAME=pflnosuch0"},
		"train", "-c", cfg, "--set", "out="+out)
	if r.code != 1 || !strings.Contains(r.output, "GLOO_SOCKET_IFNAME") || !strings.Contains(r.output, "pflnosuch0") {
		t.Fatalf("an interface that does not exist: exit %d\n%s", r.code, r.output)
	}
}

// TestJoiningIsBounded starts rank 0 of a group of 2, then rank 1 of another, whose other
// rank never comes (rank 1 finds no store to connect to), and wants each to fail after
// PFL_DIST_TIMEOUT and a moment, rank 0 naming the rank that did not join, both naming
// the variable. Joining has several steps (the store, the wait for every rank, Gloo's
// connections), each with a timeout of its own, which must not add up. The bound is on
// the join as the error reports it ("gave up after"), not on the process: starting the
// process (loading libtorch, reading the data) takes seconds more on a loaded machine,
// and is bounded only against a hang.
func TestJoiningIsBounded(t *testing.T) {
	out := t.TempDir()
	cfg := writeDistConfig(t, out)
	// Long enough that steps taking the timeout each (2.5 times it, as they did) exceed
	// the bound below by more than a scheduler's delays.
	const timeout = 6 * time.Second
	// the timeout, the 2 s the watchdog grants the native join beyond it, and a second
	// of scheduling on a loaded machine
	const joinBound = timeout + 3*time.Second
	gaveUp := regexp.MustCompile(`gave up after ([0-9.]+m?s)`)
	type ended struct {
		r       pflResult
		elapsed time.Duration
	}
	var res [2]ended
	for rank := range res {
		port, err := freePort() // no other rank comes to it
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		r := runPFL(t, out, []string{"WORLD_SIZE=2", fmt.Sprintf("RANK=%d", rank), "MASTER_ADDR=127.0.0.1",
			fmt.Sprintf("MASTER_PORT=%d", port), "PFL_DIST_TIMEOUT=" + timeout.String()}, "train", "-c", cfg, "--set", "out="+out)
		res[rank] = ended{r, time.Since(t0)}
	}
	for rank, e := range res {
		t.Logf("rank %d alone: exit %d after %v (%s)", rank, e.r.code, e.elapsed.Round(time.Millisecond), gaveUp.FindString(e.r.output))
		want := "PFL_DIST_TIMEOUT=" + timeout.String()
		if rank == 0 {
			want = "rank 1 did not join"
		}
		m := gaveUp.FindStringSubmatch(e.r.output)
		var joined time.Duration
		if m != nil {
			joined, _ = time.ParseDuration(m[1])
		}
		switch hang := timeout + time.Minute; {
		case e.r.code != 1:
			t.Errorf("rank %d alone: exit %d, want 1:\n%s", rank, e.r.code, e.r.output)
		case e.elapsed > hang:
			t.Errorf("rank %d alone: the process ended after %v, want at most %v:\n%s", rank, e.elapsed, hang, e.r.output)
		case !strings.Contains(e.r.output, want) || !strings.Contains(e.r.output, "PFL_DIST_TIMEOUT"):
			t.Errorf("rank %d alone: the error does not say %q and name PFL_DIST_TIMEOUT:\n%s", rank, want, e.r.output)
		case m == nil:
			t.Errorf("rank %d alone: the error does not say how long joining took (\"gave up after\"):\n%s", rank, e.r.output)
		case joined > joinBound || joined < timeout/2: // the native side keeps part of the timeout for its last step
			t.Errorf("rank %d alone: joining gave up after %v, want about %v (at most %v):\n%s", rank, joined, timeout, joinBound, e.r.output)
		}
	}
}

// TestAcrossProcessesSurvivesALostRank kills rank 1 of a 2-rank run after a checkpoint,
// wants the launch to end within a bound with an error naming rank 1, then resumes the
// run from its last checkpoint on 3 ranks and wants the metrics of the uninterrupted run
// (in one process) within the tolerances of TestAcrossProcessesMatchesOneProcess.
func TestAcrossProcessesSurvivesALostRank(t *testing.T) {
	out := t.TempDir()
	cfg := writeDistConfig(t, out)
	// more local epochs, so that a round lasts long enough to kill a rank inside the run
	sets := []string{"train.rounds=6", "train.epochs=4"}
	want := distRun(t, out, cfg, 1, append(sets, "name=whole")...)

	args := []string{"launch", "-n", "2", "--", "train", "-c", cfg, "--set", "out=" + out, "--set", "name=cut"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(childEnvironment(t), "PFL_DIST_TIMEOUT=60s")
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(outPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log strings.Builder
	pidRE := regexp.MustCompile(`^\[rank 1\] pid (\d+)$`)
	ckRE := regexp.MustCompile(`^\[rank 0\] .*checkpoint round 2\b`)
	pid := 0
	deadline := time.After(2 * time.Minute)
	for killed := false; !killed; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the run ended before rank 1 was killed:\n%s", log.String())
			}
			log.WriteString(l + "\n")
			if m := pidRE.FindStringSubmatch(l); m != nil {
				pid, _ = strconv.Atoi(m[1])
			}
			if ckRE.MatchString(l) && pid > 0 {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no checkpoint of round 2 in 2 minutes:\n%s", log.String())
		}
	}
	// The survivors notice at their next collective (the dead rank's sockets are closed)
	// and launch stops them; 60 s is far above the few seconds that takes here.
	t0 := time.Now()
	waited := make(chan error, 1)
	go func() {
		for l := range lines {
			log.WriteString(l + "\n")
		}
		waited <- cmd.Wait()
	}()
	select {
	case err := <-waited:
		if err == nil {
			t.Fatalf("launch succeeded with rank 1 killed:\n%s", log.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("launch still running 60 s after rank 1 was killed:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "rank 1 of 2 failed") {
		t.Fatalf("launch's error does not name rank 1:\n%s", log.String())
	}
	t.Logf("launch ended %v after rank 1 was killed", time.Since(t0).Round(time.Millisecond))

	r := runPFL(t, out, nil, "launch", "-force", "-n", "3", "--", "train", "--resume", filepath.Join(out, "cut"))
	if r.code != 0 {
		t.Fatalf("resume on 3 ranks: exit %d\n%s", r.code, r.output)
	}
	if !strings.Contains(r.output, "resumed") {
		t.Fatalf("resume on 3 ranks did not resume:\n%s", r.output)
	}
	sameMetrics(t, "killed on 2 ranks, resumed on 3", readMetrics(t, filepath.Join(out, "cut")), want)
}

// TestAcrossProcessesStopTogether interrupts pfl launch (SIGINT, as a Ctrl-C) during a
// 2-rank run and wants both ranks to stop after the same round, rank 0 with a checkpoint
// of that round, and launch to fail saying it was interrupted.
func TestAcrossProcessesStopTogether(t *testing.T) {
	out := t.TempDir()
	cfg := writeDistConfig(t, out)
	cmd := exec.Command(os.Args[0], "launch", "-n", "2", "--", "train", "-c", cfg, "--set", "out="+out, "--set", "name=stop",
		"--set", "train.rounds=20", "--set", "train.epochs=4")
	cmd.Env = childEnvironment(t)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(pipe)
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	sent := false
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if !sent && strings.HasPrefix(sc.Text(), "[rank 0] checkpoint round 1") {
			cmd.Process.Signal(os.Interrupt)
			sent = true
		}
	}
	err = cmd.Wait()
	text := log.String()
	if !sent || err == nil || !strings.Contains(text, "interrupted: the ranks stopped") {
		t.Fatalf("launch interrupted after round 1: %v\n%s", err, text)
	}
	stopped := regexp.MustCompile(`\[rank (\d)\] pfl train: interrupted after round (\d+)`).FindAllStringSubmatch(text, -1)
	if len(stopped) != 2 || stopped[0][2] != stopped[1][2] || stopped[0][2] == "20" {
		t.Fatalf("the ranks did not stop after the same round: %v\n%s", stopped, text)
	}
	round, _ := strconv.Atoi(stopped[0][2])
	if got := readMetrics(t, filepath.Join(out, "stop")); len(got) != round {
		t.Fatalf("metrics.jsonl has %d rounds, the ranks stopped after %d", len(got), round)
	}
	if !strings.Contains(text, fmt.Sprintf("[rank 0] checkpoint round %d", round)) {
		t.Fatalf("rank 0 saved no checkpoint of round %d:\n%s", round, text)
	}
}

// TestLaunchNamesTheRankASignalStopped sends SIGTERM to rank 1 alone: every rank stops
// after the same round (rank 0 with its checkpoint), and launch must name rank 1, the one
// the signal stopped, whichever rank ended first, and leave no lock file.
func TestLaunchNamesTheRankASignalStopped(t *testing.T) {
	out := t.TempDir()
	cfg := writeDistConfig(t, out)
	cmd := exec.Command(os.Args[0], "launch", "-n", "2", "--", "train", "-c", cfg, "--set", "out="+out, "--set", "name=term",
		"--set", "train.rounds=20", "--set", "train.epochs=4")
	cmd.Env = childEnvironment(t)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(pipe)
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	pidRE := regexp.MustCompile(`^\[rank 1\] pid (\d+)$`)
	pid, sent := 0, false
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := pidRE.FindStringSubmatch(sc.Text()); m != nil {
			pid, _ = strconv.Atoi(m[1])
		}
		if !sent && pid > 0 && strings.HasPrefix(sc.Text(), "[rank 0] checkpoint round 1") {
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			sent = true
		}
	}
	err = cmd.Wait()
	text := log.String()
	if !sent || err == nil || !strings.Contains(text, "pfl launch: rank 1 of 2 was stopped by a signal sent to it") {
		t.Fatalf("SIGTERM to rank 1: %v; want launch to name rank 1\n%s", err, text)
	}
	if !regexp.MustCompile(`\[rank 0\] pfl train: interrupted after round \d+; continue with: pfl train --resume`).MatchString(text) {
		t.Fatalf("rank 0 did not stop with its checkpoint and the resume hint:\n%s", text)
	}
	noLocks(t, out)
}

// TestSuiteAcrossProcessesMatchesOneProcess runs a two-member suite (FedAvg, then FedTP,
// whose hypernetwork is the second member's own) in one process and on 2 ranks: every
// rank runs the members in order, each split across the ranks as a single run, and rank 0
// writes each member's directory and the suite's table. Each member's metrics must match
// the one-process suite's within the tolerances of TestAcrossProcessesMatchesOneProcess;
// a resume of the finished suite on 2 ranks must find nothing to train and rewrite the
// same table.
func TestSuiteAcrossProcessesMatchesOneProcess(t *testing.T) {
	out := t.TempDir()
	cfg := writeDistConfig(t, out)
	suite := "suite=[fedavg, fedtp]"
	run := func(name string, n int, extra ...string) {
		args := []string{"train", "-c", cfg, "--set", "out=" + out, "--set", suite, "--set", "name=" + name}
		args = append(args, extra...)
		if n > 1 {
			args = append([]string{"launch", "-n", strconv.Itoa(n), "--"}, args...)
		}
		if r := runPFL(t, out, nil, args...); r.code != 0 {
			t.Fatalf("pfl %v: exit %d\n%s", args, r.code, r.output)
		}
	}
	run("one", 1)
	run("two", 2)
	for _, member := range []string{"fedavg", "fedtp"} {
		sameMetrics(t, member+" in a suite on 2 ranks",
			readMetrics(t, filepath.Join(out, "two", member)), readMetrics(t, filepath.Join(out, "one", member)))
	}
	table, err := os.ReadFile(filepath.Join(out, "two", "results.md"))
	if err != nil || !strings.Contains(string(table), "| fedavg |") || !strings.Contains(string(table), "| fedtp |") {
		t.Fatalf("rank 0's suite table: %v\n%s", err, table)
	}
	if r := runPFL(t, out, nil, "launch", "-n", "2", "--", "train", "--resume", filepath.Join(out, "two")); r.code != 0 {
		t.Fatalf("resume of the finished suite on 2 ranks: exit %d\n%s", r.code, r.output)
	}
	again, err := os.ReadFile(filepath.Join(out, "two", "results.md"))
	if err != nil || string(withoutWall(again)) != string(withoutWall(table)) {
		t.Fatalf("the resumed suite's table changed: %v\n%s\nwas\n%s", err, again, table)
	}
}

// withoutWall drops the wall-time column of a results.md table (a resume's own time).
func withoutWall(b []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, "|"); len(f) == 10 { // | algorithm | … 8 columns … | wall s |
			l = strings.Join(f[:8], "|")
		}
		out = append(out, l)
	}
	return []byte(strings.Join(out, "\n"))
}
