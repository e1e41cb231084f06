package experiment

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/rundir"
	"pfl/engine/safetensors"
	"pfl/internal/testenv"
)

// smallRun is a few seconds of training on synthetic data.
func smallRun(out, name string) config.Config {
	return filled(config.Config{Name: name, Out: out, Data: config.Data{Dataset: "synthetic:300", Clients: 4, Partition: "iid"},
		Train: config.Train{Rounds: 2, Participation: 0.5, Batch: 32, LR: 0.05, EvalEvery: 1, CheckpointEvery: 1}})
}

func TestExistingRunIsRefusedAndKept(t *testing.T) {
	out := t.TempDir()
	cfg := smallRun(out, "kept")
	if _, err := Run(context.Background(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "kept")
	before := testenv.Snapshot(t, dir)
	bad := cfg
	bad.Data.ImageSize = 8 // the convnet cannot take it
	for _, c := range []struct {
		cfg  config.Config
		opts Options
		want string
	}{
		{cfg, Options{}, "already holds a run"},
		{bad, Options{Overwrite: true}, "data.image_size"}, // fails while building: the old run stays
	} {
		_, err := RunWith(context.Background(), c.cfg, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("error %v, want one containing %q", err, c.want)
		}
		testenv.SameFiles(t, before, testenv.Snapshot(t, dir))
	}
	if _, err := RunWith(context.Background(), cfg, Options{Overwrite: true}); err != nil {
		t.Fatalf("--overwrite: %v", err)
	}
	// a run that fails before training leaves no directory
	bad.Name = "never"
	if _, err := Run(context.Background(), bad, nil); err == nil {
		t.Fatal("a convnet on 8-pixel images ran")
	}
	if _, err := os.Stat(filepath.Join(out, "never")); !os.IsNotExist(err) {
		t.Fatalf("a failed run left %s behind (%v)", filepath.Join(out, "never"), err)
	}
}

// editConfig rewrites one key of a run's config.json.
func editConfig(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestResumeRefusesAnotherExperiment(t *testing.T) {
	out := t.TempDir()
	cfg := smallRun(out, "fp")
	cfg.Train.Rounds = 1
	if _, err := Run(context.Background(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "fp")
	for _, c := range []struct {
		edit func(m map[string]any)
		want []string
	}{
		{func(m map[string]any) { m["seed"] = 7 }, []string{"seed"}},
		{func(m map[string]any) {
			m["data"].(map[string]any)["partition"] = "dirichlet"
			m["algorithm"].(map[string]any)["name"] = "local"
		}, []string{"data.partition", "algorithm.name"}},
	} {
		orig, _ := os.ReadFile(filepath.Join(dir, "config.json"))
		editConfig(t, dir, c.edit)
		_, err := Resume(context.Background(), dir, nil)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("resume after editing %v: %v", c.want, err)
			}
		}
		os.WriteFile(filepath.Join(dir, "config.json"), orig, 0o644)
	}
	// more rounds and another cadence are allowed
	editConfig(t, dir, func(m map[string]any) {
		tr := m["train"].(map[string]any)
		tr["rounds"], tr["eval_every"] = 3, 2
	})
	res, err := Resume(context.Background(), dir, nil)
	if err != nil || len(res.History) != 3 {
		t.Fatalf("resume with more rounds: %v", err)
	}
}

func TestCheckpointDamageIsAnError(t *testing.T) {
	out := t.TempDir()
	cfg := smallRun(out, "damaged")
	if _, err := Run(context.Background(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "damaged")
	path := filepath.Join(dir, rundir.CheckpointFile)
	good, _ := os.ReadFile(path)
	f, err := safetensors.Read(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(meta map[string]string) []byte {
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, f.Tensors, meta); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	crafted := func(history string) map[string]string {
		m := map[string]string{}
		for k, v := range f.Metadata {
			m[k] = v
		}
		sum := sha256.Sum256([]byte(history))
		m["history"], m["history_sha256"] = history, hex.EncodeToString(sum[:])
		return m
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)-3] ^= 0x40 // a bit in the last tensor's data
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"flipped data", flipped, "checksum"},
		{"truncated", good[:len(good)/2], "checkpoint"},
		{"round numbered -1", rewrite(crafted(`[{"Round":-1,"Clients":[0],"TrainLoss":1,"Samples":1,"Time":{}}]`)), "history"},
		{"eval for 1 client of 4", rewrite(crafted(`[{"Round":0,"Clients":[0],"TrainLoss":1,"Samples":1,"Eval":{"Correct":[1],"Count":[1],"Accuracy":[1],"Loss":[0],"Micro":1,"Mean":1,"Std":0},"Time":{}}]`)), "history"},
		{"history edited without its checksum", rewrite(func() map[string]string {
			m := crafted(f.Metadata["history"])
			m["history"] = strings.Replace(m["history"], `"Round":0`, `"Round":1`, 1)
			return m
		}()), "checksum"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, c.file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Resume(context.Background(), dir, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("resume: %v; want an error naming %s and %q", err, dir, c.want)
			}
			_, _, err = Evaluate(dir)
			if err == nil || strings.Contains(err.Error(), "resume") {
				t.Fatalf("eval: %v; want an error that does not speak of resuming", err)
			}
		})
	}
}

func TestSignalInTheLastRoundStillSummarizes(t *testing.T) {
	for _, c := range []struct {
		cancelAfter int // the round whose report cancels the context
		finished    bool
	}{{1, false}, {2, true}} {
		out := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		_, err := Run(ctx, smallRun(out, "sig"), cancelAt{c.cancelAfter, cancel})
		_, statErr := os.Stat(filepath.Join(out, "sig", "summary.json"))
		if c.finished != (err == nil && statErr == nil) {
			t.Fatalf("cancelled after round %d: %v, summary %v", c.cancelAfter, err, statErr)
		}
		if !c.finished && (err == nil || !strings.Contains(err.Error(), "--resume")) {
			t.Fatalf("cancelled after round %d: %v, want the resume hint", c.cancelAfter, err)
		}
		cancel()
	}
}

// cancelAt cancels when round `at` is reported, as a signal arriving in that round.
type cancelAt struct {
	at     int
	cancel func()
}

func (c cancelAt) Round(_ fl.RoundMetrics, p Progress) {
	if p.Done == c.at {
		c.cancel()
	}
}
func (cancelAt) Log(string) {}

func TestSetUpStopsOnACancelledContext(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, smallRun(out, "early"), nil)
	if err == nil || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "early")); !os.IsNotExist(err) {
		t.Fatalf("an interrupted set-up wrote %s", filepath.Join(out, "early"))
	}
}

func TestMemoryFloorRefusesBeforeAllocating(t *testing.T) {
	cfg := config.Default()
	cfg.Model.Preset, cfg.Model.Depth = "tiny-vit", new(int64(100000))
	cfg = cfg.Resolved()
	build, err := builder(cfg, cfg.Algorithm.Strategy(), 10, 3, 32, 32, cudaCPU)
	if err != nil {
		t.Fatal(err)
	}
	need, err := memoryFloor(cfg, build)
	if err != nil || need < 1e12 {
		t.Fatalf("floor %g bytes (%v), want over a terabyte for 100,000 blocks", need, err)
	}
	_, err = checkMemory(cfg, cfg.Algorithm.Strategy(), build, cudaCPU)
	if have, _ := memAvailable(); have > 0 && (err == nil || !strings.Contains(err.Error(), "GiB")) {
		t.Fatalf("%v; want a refusal with the estimate", err)
	}
}

func TestSuiteResumesAsAWhole(t *testing.T) {
	out := t.TempDir()
	cfg := smallRun(out, "suite")
	cfg.Suite = []string{"fedavg", "local"}
	ctx, cancel := context.WithCancel(context.Background())
	// the first member is stopped after its first round, the second never starts
	_, err := RunSuiteWith(ctx, cfg, Options{Observer: cancelAt{1, cancel}})
	dir := filepath.Join(out, "suite")
	// the hint names the suite, whose resumption writes its results, not the member
	if err == nil || !strings.HasSuffix(err.Error(), "continue with: pfl train --resume "+dir) {
		t.Fatalf("the interrupted suite: %v; want the suite's directory to resume", err)
	}
	if !rundir.IsSuite(dir) {
		t.Fatal("the suite's directory is not recognised as one")
	}
	sr, err := ResumeSuite(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.Runs) != 2 || !strings.Contains(sr.Table, "| local |") {
		t.Fatalf("resumed suite: %d runs\n%s", len(sr.Runs), sr.Table)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.md")); err != nil {
		t.Fatal(err)
	}
}

// TestLocalClientsChoosesWhoTrains: algorithm.local_clients "all" (and unset) trains every
// client in every round, FedTP's official local training; "sampled" trains the round's
// sampled clients only, FedPerfix's official Local; metrics.jsonl lists who trained.
func TestLocalClientsChoosesWhoTrains(t *testing.T) {
	for _, c := range []struct {
		value string
		want  int // clients per round, of 4 at participation 0.5
	}{{"", 4}, {"all", 4}, {"sampled", 2}} {
		cfg := smallRun(t.TempDir(), "local")
		cfg.Algorithm.Name, cfg.Algorithm.LocalClients = "local", c.value
		res, err := Run(context.Background(), cfg, nil)
		if err != nil {
			t.Fatalf("local_clients %q: %v", c.value, err)
		}
		b, err := os.ReadFile(filepath.Join(res.Dir, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r struct{ Clients []int }
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Clients) != c.want {
				t.Errorf("local_clients %q: a round trained clients %v, want %d of them", c.value, r.Clients, c.want)
			}
		}
	}
}
