package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// resumeConfig is a run long enough to be killed in the middle.
func resumeConfig(out string) Config {
	return Config{Name: "killed", Out: out,
		Data:      DataConfig{Dataset: "synthetic:800", Clients: 8, Partition: "dirichlet", Alpha: 0.5, Augment: true},
		Model:     ModelConfig{Preset: "convnet-bn"},
		Algorithm: AlgorithmConfig{Name: "fedbn"},
		Train: TrainConfig{Rounds: 8, Participation: 0.5, Epochs: 1, Batch: 32, LR: 0.05, Momentum: 0.9,
			WeightDecay: 1e-4, EvalEvery: 2, CheckpointEvery: 1}}
}

// TestChildRun is the process the resume test kills; it does nothing in a normal run.
func TestChildRun(t *testing.T) {
	out := os.Getenv("PFL_TEST_CHILD_OUT")
	if out == "" {
		t.Skip("helper process for TestResumeAfterKillIsExact")
	}
	Run(context.Background(), resumeConfig(out), stallAfter{Lines{os.Stdout}, "checkpoint round 3"}) // killed before it ends
}

// stallAfter reports like Lines and then hangs after msg, so the parent's SIGKILL lands at
// a known point even when the machine is busy (otherwise the child may finish first).
type stallAfter struct {
	Lines
	msg string
}

func (s stallAfter) Log(msg string) {
	s.Lines.Log(msg)
	if msg == s.msg {
		time.Sleep(time.Hour)
	}
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

func TestResumeAfterKillIsExact(t *testing.T) {
	// The uninterrupted reference run.
	ref := t.TempDir()
	if _, err := Run(context.Background(), resumeConfig(ref), nil); err != nil {
		t.Fatal(err)
	}
	// The same run in a child process, killed with SIGKILL once round 3's checkpoint is out.
	killed := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildRun$")
	cmd.Env = append(os.Environ(), "PFL_TEST_CHILD_OUT="+killed)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	seen := false
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "checkpoint round 3") {
			seen = true
			cmd.Process.Kill()
			break
		}
	}
	cmd.Wait()
	if !seen {
		t.Fatal("the child never reported round 3's checkpoint")
	}
	dir := filepath.Join(killed, "killed")
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		t.Fatal("the child finished before it was killed")
	}
	if _, err := Resume(context.Background(), dir, nil); err != nil {
		t.Fatal(err)
	}
	want := metricsWithoutTimes(t, filepath.Join(ref, "killed"))
	got := metricsWithoutTimes(t, dir)
	if len(got) != len(want) {
		t.Fatalf("%d metric lines after resume, %d uninterrupted", len(got), len(want))
	}
	for i := range want {
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(want[i])
		if string(a) != string(b) {
			t.Fatalf("round %d differs after resume:\n got %s\nwant %s", i, a, b)
		}
	}
}

func TestInterruptSavesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as if SIGINT arrived during the first round
	out := t.TempDir()
	_, err := Run(ctx, resumeConfig(out), nil)
	if err == nil || !strings.Contains(err.Error(), "pfl train --resume") {
		t.Fatalf("error %v, want the resume hint", err)
	}
	if _, err := os.Stat(filepath.Join(out, "killed", checkpointFile)); err != nil {
		t.Fatal("no checkpoint after the interrupt")
	}
	res, err := Resume(context.Background(), filepath.Join(out, "killed"), nil)
	if err != nil || len(res.History) != 8 {
		t.Fatalf("resume: %v (%d rounds)", err, len(res.History))
	}
}
