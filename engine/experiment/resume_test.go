package experiment

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/rundir"
)

// resumeConfig is a run long enough to be killed in the middle: FedBN over a Dirichlet
// split with augmentation, so the resumed run must restore the global model, the clients'
// BatchNorm layers and running statistics, the momentum buffers and every random stream
// (sampling, batches, augmentation) to reproduce the uninterrupted run's metrics.
func resumeConfig(out string, checkpointEvery int) config.Config {
	cfg := config.Default()
	cfg.Name, cfg.Out = "killed", out
	cfg.Data.Dataset, cfg.Data.Clients = "synthetic:800", 8
	cfg.Data.Partition, cfg.Data.Alpha, cfg.Data.Augment = "dirichlet", 0.5, true
	cfg.Data.ImageSize = 16 // a quarter of the pixels: quick rounds
	cfg.Model.Preset = "convnet-bn"
	cfg.Algorithm.Name = "fedbn"
	cfg.Train.Rounds, cfg.Train.Participation, cfg.Train.Epochs, cfg.Train.Batch = 6, 0.5, 1, 32
	cfg.Train.LR, cfg.Train.Momentum, cfg.Train.WeightDecay = 0.05, 0.9, 1e-4
	cfg.Train.EvalEvery, cfg.Train.CheckpointEvery = 2, checkpointEvery
	return cfg
}

// The child process (TestChildRun) is told what to do by these environment variables.
const (
	childOutEnv    = "PFL_TEST_CHILD_OUT"    // the runs' parent folder; unset: no child
	childEveryEnv  = "PFL_TEST_CHILD_EVERY"  // train.checkpoint_every of a fresh run
	childResumeEnv = "PFL_TEST_CHILD_RESUME" // "1": resume the run instead of starting it
	childStallEnv  = "PFL_TEST_CHILD_STALL"  // where to stop and wait to be killed (a stallPoint)
)

// stalledMarker starts the line a child prints when it reaches its stall point.
const stalledMarker = "pfl-test: stalled at "

// A stallPoint is where a child stops, as "kind:arg":
//
//	log:MSG    after reporting the event MSG (e.g. "log:checkpoint round 2")
//	round:N    after reporting round N (done = N), before any checkpoint of that round
//	write:N    in the N-th checkpoint this process writes, once half of its bytes are in
//	           the temporary file (about half: the size of the checkpoint it replaces)
//	rename:N   in the N-th checkpoint, once the temporary file is complete on disk and
//	           before it is renamed over the old checkpoint
//
// write and rename go through rundir.CheckpointHook; log and round through the Observer, so those
// children write their checkpoints through the unhooked path, as pfl does.
type stallPoint struct {
	kind, arg string
	n         int // arg as a number, for round, write and rename
}

func parseStallPoint(s string) (stallPoint, error) {
	kind, arg, ok := strings.Cut(s, ":")
	p := stallPoint{kind: kind, arg: arg}
	switch {
	case !ok:
		return p, fmt.Errorf("stall point %q: want kind:arg", s)
	case kind == "log":
		return p, nil
	case kind == "round" || kind == "write" || kind == "rename":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || kind == "write" && n < 2 {
			return p, fmt.Errorf("stall point %q: want a count ≥ 1 (≥ 2 for write: half of the previous checkpoint)", s)
		}
		p.n = n
		return p, nil
	}
	return p, fmt.Errorf("stall point %q: unknown kind %q", s, kind)
}

// stall reports that the child reached its stall point and blocks until the parent's
// SIGKILL. It blocks reading stdin, a pipe the parent holds open and never writes: it is
// not a timed wait, and a child whose parent died reads EOF and exits instead of lingering.
func stall(p stallPoint) {
	fmt.Printf("%s%s:%s\n", stalledMarker, p.kind, p.arg)
	io.Copy(io.Discard, os.Stdin)
	os.Exit(3)
}

// stallingObserver reports like Lines and stalls at a log or round stall point.
type stallingObserver struct {
	Lines
	at stallPoint
}

func (o stallingObserver) Log(msg string) {
	o.Lines.Log(msg)
	if o.at.kind == "log" && msg == o.at.arg {
		stall(o.at)
	}
}

func (o stallingObserver) Round(m fl.RoundMetrics, p Progress) {
	o.Lines.Round(m, p)
	if o.at.kind == "round" && p.Done == o.at.n {
		stall(o.at)
	}
}

// checkpointStaller is the rundir.CheckpointHook of a write or rename stall point.
type checkpointStaller struct {
	at              stallPoint
	dir             string // the run directory
	writes, renames int
	w               io.Writer // the writer of the checkpoint being written
}

func (c *checkpointStaller) hook(stage string, w io.Writer) io.Writer {
	switch stage {
	case "write":
		c.writes++
		c.w = w
		if c.at.kind == "write" && c.writes == c.at.n {
			st, err := os.Stat(filepath.Join(c.dir, rundir.CheckpointFile))
			if err != nil {
				fmt.Printf("pfl-test: no previous checkpoint to size the write by: %v\n", err)
				os.Exit(2)
			}
			return &stallingWriter{w: w, left: st.Size() / 2, at: c.at}
		}
	case "rename":
		c.renames++
		if c.at.kind == "rename" && c.renames == c.at.n {
			flush(c.w) // the whole temporary file on disk, as the rename would find it
			stall(c.at)
		}
	}
	return w
}

// stallingWriter passes left bytes to w, then flushes them to the file and stalls.
type stallingWriter struct {
	w    io.Writer
	left int64
	at   stallPoint
}

func (s *stallingWriter) Write(p []byte) (int, error) {
	if int64(len(p)) < s.left {
		s.left -= int64(len(p))
		return s.w.Write(p)
	}
	s.w.Write(p[:s.left])
	flush(s.w)
	stall(s.at)
	return 0, errors.New("unreachable")
}

// flush pushes a buffered writer's bytes to its file.
func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() error }); ok {
		f.Flush()
	}
}

// TestChildRun is the process the kill tests kill; it does nothing in a normal run.
func TestChildRun(t *testing.T) {
	out := os.Getenv(childOutEnv)
	if out == "" {
		t.Skip("helper process for TestResumeAfterKillIsExact")
	}
	at, err := parseStallPoint(os.Getenv(childStallEnv))
	if err != nil {
		t.Fatal(err)
	}
	every, err := strconv.Atoi(os.Getenv(childEveryEnv))
	if err != nil {
		t.Fatalf("%s: %v", childEveryEnv, err)
	}
	cfg := resumeConfig(out, every)
	dir := filepath.Join(out, cfg.Name)
	if at.kind == "write" || at.kind == "rename" {
		rundir.CheckpointHook = (&checkpointStaller{at: at, dir: dir}).hook
	}
	obs := stallingObserver{Lines{os.Stdout}, at}
	if os.Getenv(childResumeEnv) == "1" {
		_, err = Resume(context.Background(), dir, obs)
	} else {
		_, err = Run(context.Background(), cfg, obs)
	}
	// Only reached when the stall point never came: the parent reports this line.
	fmt.Printf("pfl-test: finished without reaching %s:%s (error: %v)\n", at.kind, at.arg, err)
}

// killedChild is one run of TestChildRun, killed at its stall point.
type killedChild struct {
	out    []string // its stdout lines
	stderr string
}

// runChildUntilStalled starts TestChildRun with env, waits for its stall marker and kills
// it with SIGKILL. A deadline only guards against a hang (a child that stops neither at
// its point nor by finishing): it is generous and bounded by the test's own deadline so
// the failure is reported here, with the child's output, rather than as a test timeout.
func runChildUntilStalled(t *testing.T, env ...string) killedChild {
	t.Helper()
	limit := 10 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(d)*9/10)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildRun$")
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe() // held open: the stalled child blocks reading it
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var c killedChild
	stalled := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		c.out = append(c.out, sc.Text())
		if strings.HasPrefix(sc.Text(), stalledMarker) {
			stalled = true
			cmd.Process.Kill() // SIGKILL: no deferred function or signal handler runs
			break
		}
	}
	io.Copy(io.Discard, stdout)
	cmd.Wait()
	c.stderr = stderr.String()
	if !stalled {
		why := "it exited"
		if ctx.Err() != nil {
			why = fmt.Sprintf("it was killed after %v, the limit that guards against a hang", limit)
		}
		t.Fatalf("the child (%s) never reached its stall point: %s.\nstdout:\n%s\nstderr:\n%s",
			strings.Join(env, " "), why, strings.Join(c.out, "\n"), c.stderr)
	}
	return c
}

// metricsWithoutTimes reads metrics.jsonl without its wall-clock fields.
func metricsWithoutTimes(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		for k := range m {
			if strings.HasPrefix(k, "time_") {
				delete(m, k)
			}
		}
		out = append(out, m)
	}
	return out
}

// sameMetrics fails t unless the run in dir has exactly the metric lines of want (the
// wall-clock fields aside).
func sameMetrics(t *testing.T, dir string, want []map[string]any) {
	t.Helper()
	got := metricsWithoutTimes(t, dir)
	if len(got) != len(want) {
		t.Fatalf("%d metric lines after resume, %d uninterrupted", len(got), len(want))
	}
	for i := range want {
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(want[i])
		if string(a) != string(b) {
			t.Fatalf("round %d differs after resume:\n got %s\nwant %s", i+1, a, b)
		}
	}
}

// TestResumeAfterKillIsExact kills the run with SIGKILL at points where a crash, an OOM
// kill or a power cut could stop it, resumes, and requires exactly the metrics of the
// uninterrupted run. The killed runs run in child processes (this test binary run again as
// TestChildRun), which print a marker at their kill point and then wait: the parent kills
// upon the marker, so each kill lands exactly at its point however busy the machine is.
func TestResumeAfterKillIsExact(t *testing.T) {
	// The uninterrupted reference run, checkpointing every round. The killed runs' metrics
	// must not depend on their checkpoint cadence either.
	ref := t.TempDir()
	if _, err := Run(context.Background(), resumeConfig(ref, 1), nil); err != nil {
		t.Fatal(err)
	}
	want := metricsWithoutTimes(t, filepath.Join(ref, "killed"))
	rounds := resumeConfig(ref, 1).Train.Rounds
	tmpPattern := "." + rundir.CheckpointFile + ".tmp*" // atomicfile's temporary files
	for _, c := range []struct {
		name  string
		every int    // train.checkpoint_every of the killed run
		first string // where the fresh run is killed
		// then, if set, where a resumed run (a second child) is killed
		second string
		// the rounds in the checkpoint left by the kills, which the final resume starts after
		saved int
		// a temporary checkpoint file is left beside the checkpoint
		partial bool
	}{
		// (a) just after a checkpoint: nothing to redo
		{name: "after-checkpoint", every: 1, first: "log:checkpoint round 2", saved: 2},
		// (b) two rounds after the last checkpoint (every 3 rounds): resume redoes rounds
		// 4 and 5, whose metric lines the killed run had already written
		{name: "unsaved-rounds", every: 3, first: "round:5", saved: 3},
		// (c) in the middle of writing round 3's checkpoint, and with its temporary file
		// complete but not yet renamed: the old checkpoint (round 2) must be intact
		{name: "mid-write", every: 1, first: "write:3", saved: 2, partial: true},
		{name: "before-rename", every: 1, first: "rename:3", saved: 2, partial: true},
		// (d) the resumed run is killed in turn, once it restored round 2's checkpoint and
		// ran and saved round 3; the second resume continues from what the first wrote
		{name: "during-resume", every: 1, first: "log:checkpoint round 2", second: "log:checkpoint round 3", saved: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			dir := filepath.Join(out, "killed")
			env := []string{childOutEnv + "=" + out, childEveryEnv + "=" + strconv.Itoa(c.every)}
			runChildUntilStalled(t, append(env, childStallEnv+"="+c.first)...)
			if c.second != "" {
				k := runChildUntilStalled(t, append(env, childStallEnv+"="+c.second, childResumeEnv+"=1")...)
				if !strings.Contains(strings.Join(k.out, "\n"), "after round 2") {
					t.Fatalf("the second child did not resume after round 2:\n%s", strings.Join(k.out, "\n"))
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
				t.Fatal("the child finished before it was killed")
			}
			_, history, _, err := rundir.ReadCheckpoint(dir, resumeConfig(out, 1).Data.Clients)
			if err != nil {
				t.Fatalf("the checkpoint the kill left: %v", err)
			}
			if len(history) != c.saved {
				t.Fatalf("the checkpoint the kill left holds %d rounds, want %d", len(history), c.saved)
			}
			tmps, _ := filepath.Glob(filepath.Join(dir, tmpPattern))
			if c.partial && len(tmps) == 0 {
				t.Fatalf("no temporary checkpoint beside the old one: the kill did not land inside the write")
			}
			for _, p := range tmps {
				if st, err := os.Stat(p); err == nil {
					t.Logf("left by the kill: %s (%d bytes)", filepath.Base(p), st.Size())
				}
			}
			var log bytes.Buffer
			res, err := Resume(context.Background(), dir, Lines{&log})
			if err != nil {
				t.Fatalf("resume: %v\n%s", err, log.String())
			}
			if !strings.Contains(log.String(), fmt.Sprintf("after round %d", c.saved)) {
				t.Errorf("resume did not start after round %d:\n%s", c.saved, log.String())
			}
			if len(res.History) != rounds {
				t.Fatalf("resumed run has %d rounds, want %d", len(res.History), rounds)
			}
			sameMetrics(t, dir, want)
		})
	}
}

func TestInterruptSavesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := t.TempDir()
	cfg := resumeConfig(out, 4) // no checkpoint of round 1 but for the interrupt's
	_, err := Run(ctx, cfg, cancelAt{1, cancel})
	if err == nil || !strings.Contains(err.Error(), "pfl train --resume") {
		t.Fatalf("error %v, want the resume hint", err)
	}
	dir := filepath.Join(out, "killed")
	if _, history, _, err := rundir.ReadCheckpoint(dir, cfg.Data.Clients); err != nil || len(history) != 1 {
		t.Fatalf("checkpoint after an interrupt in round 1: %v, %d rounds, want 1", err, len(history))
	}
	res, err := Resume(context.Background(), dir, nil)
	if err != nil || len(res.History) != cfg.Train.Rounds {
		t.Fatalf("resume: %v (%d rounds, want %d)", err, len(res.History), cfg.Train.Rounds)
	}
}

// TestResumeExtendsAFinishedRun: a finished run, suite or grid resumed with more rounds
// (train.rounds is one of the keys a resume may change) must equal the longer one trained
// at once, since every random stream derives from (seed, purpose, round, client) and not
// from the total; the studies in bench/RESULTS.md were lengthened this way. The grid's
// sweep has a learning rate at which its runs diverge in their first round: they stay
// diverged, nothing trained again.
func TestResumeExtendsAFinishedRun(t *testing.T) {
	for _, c := range []struct {
		name     string
		shape    func(*config.Config)
		runs     []string // the run directories, under the experiment's
		diverged int      // of them
	}{
		{"run", func(*config.Config) {}, []string{"."}, 0},
		{"suite", func(c *config.Config) { c.Suite = []string{"fedbn", "fedavg"} }, []string{"fedbn", "fedavg"}, 0},
		{"grid", func(c *config.Config) {
			c.Seeds = []uint64{1, 2}
			c.Sweep = []config.SweepAxis{{Key: "train.lr", Values: []string{"0.05", "1e6"}}}
		}, []string{"train.lr=0.05/seed-1", "train.lr=0.05/seed-2", "train.lr=1e6/seed-1", "train.lr=1e6/seed-2"}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref, out := t.TempDir(), t.TempDir()
			long, short := resumeConfig(ref, 2), resumeConfig(out, 2)
			c.shape(&long)
			c.shape(&short)
			short.Train.Rounds = long.Train.Rounds - 2
			for _, cfg := range []config.Config{long, short} {
				if err := runAny(cfg); err != nil {
					t.Fatal(err)
				}
			}
			var log bytes.Buffer
			dir := filepath.Join(out, "killed")
			if err := resumeTo(dir, long.Train.Rounds, Options{Observer: Lines{&log}}); err != nil {
				t.Fatalf("resume to %d rounds: %v\n%s", long.Train.Rounds, err, log.String())
			}
			trained := len(c.runs) - c.diverged
			if n := strings.Count(log.String(), fmt.Sprintf("after round %d", short.Train.Rounds)); n != trained {
				t.Errorf("%d runs resumed after round %d, want %d:\n%s", n, short.Train.Rounds, trained, log.String())
			}
			if n := strings.Count(log.String(), "finished before; skipped"); n != c.diverged {
				t.Errorf("%d runs skipped, want the %d diverged:\n%s", n, c.diverged, log.String())
			}
			for _, r := range c.runs {
				sameMetrics(t, filepath.Join(dir, r), metricsWithoutTimes(t, filepath.Join(ref, "killed", r)))
				if s, err := rundir.ReadSummary(filepath.Join(dir, r)); err != nil || (s.Diverged == 0 && s.Rounds != long.Train.Rounds) {
					t.Errorf("%s: summary of %d rounds (%v), want %d or diverged", r, s.Rounds, err, long.Train.Rounds)
				}
			}
			if cfg, err := rundir.LoadConfig(dir); err != nil || cfg.Train.Rounds != long.Train.Rounds {
				t.Errorf("config.json of the extended %s: train.rounds %d (%v), want %d", c.name, cfg.Train.Rounds, err, long.Train.Rounds)
			}
			// fewer rounds than done: refused, naming the key and the rounds, config.json kept
			err := resumeTo(dir, short.Train.Rounds, Options{})
			if err == nil || !strings.Contains(err.Error(), "train.rounds") || !strings.Contains(err.Error(), fmt.Sprintf("%d rounds", long.Train.Rounds)) {
				t.Errorf("resume to %d rounds after %d: %v; want a refusal naming train.rounds and the rounds done", short.Train.Rounds, long.Train.Rounds, err)
			}
			if cfg, err := rundir.LoadConfig(dir); err != nil || cfg.Train.Rounds != long.Train.Rounds {
				t.Errorf("the refused resume left train.rounds %d (%v) in config.json, want %d", cfg.Train.Rounds, err, long.Train.Rounds)
			}
		})
	}
}

// runAny runs cfg: a grid, a suite or one run.
func runAny(cfg config.Config) error {
	var err error
	switch {
	case cfg.IsGrid():
		_, err = RunGrid(context.Background(), cfg, Options{})
	case len(cfg.Suite) > 0:
		_, err = RunSuite(context.Background(), cfg, nil)
	default:
		_, err = Run(context.Background(), cfg, nil)
	}
	return err
}

// resumeTo resumes the run, suite or grid in dir with train.rounds set to rounds.
func resumeTo(dir string, rounds int, opts Options) error {
	cfg, err := rundir.LoadGridConfig(dir)
	if err != nil {
		return err
	}
	cfg.Train.Rounds = rounds
	switch {
	case cfg.IsGrid():
		_, err = ResumeGridAs(context.Background(), cfg, opts)
	case len(cfg.Suite) > 0:
		_, err = ResumeSuiteAs(context.Background(), cfg, opts)
	default:
		_, err = ResumeWith(context.Background(), cfg, opts)
	}
	return err
}
