package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/rundir"
	"pfl/internal/testenv"
)

func TestRunWritesTheRunDirectory(t *testing.T) {
	cfg := filled(config.Config{Name: "tiny", Out: t.TempDir(),
		Data:      config.Data{Dataset: "synthetic:600", Clients: 6, Partition: "dirichlet", Alpha: 1},
		Algorithm: fl.Settings{Name: "fedper"},
		Train:     config.Train{Rounds: 3, Participation: 0.5, Batch: 32, LR: 0.05, EvalEvery: 1}})
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "partition.json", "partition.png", "metrics.jsonl", "summary.json",
		"accuracy.png", "accuracy.svg", "loss.png", "loss.svg", "clients.png", "clients.svg"} {
		if st, err := os.Stat(filepath.Join(res.Dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(res.Dir, "metrics.jsonl"))
	if lines := strings.Count(string(b), "\n"); lines != 3 {
		t.Errorf("metrics.jsonl has %d lines, want one per round", lines)
	}
	var s rundir.Summary
	b, _ = os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err := json.Unmarshal(b, &s); err != nil || s.Rounds != 3 || s.TailEvals != 3 || !(s.FinalMicro > 0.1) {
		t.Fatalf("summary %+v, %v", s, err)
	}
	// evaluating the saved checkpoint reproduces the last round's evaluation
	ev, rounds, err := Evaluate(res.Dir)
	if err != nil || rounds != 3 || ev.Micro != s.FinalMicro {
		t.Fatalf("eval of the checkpoint: %v after %d rounds (%v), want %v", ev.Micro, rounds, err, s.FinalMicro)
	}
}

func TestFedTPRunsCheckpointTheirHypernetwork(t *testing.T) {
	for _, alg := range []string{"fedtp", "fedtp-per", "fedtp-rod", "fedtp-knn"} {
		t.Run(alg, func(t *testing.T) {
			// synthetic 32×32 images; a small tiny-vit (patch 8) built from the size keys
			cfg := filled(config.Config{Name: alg, Out: t.TempDir(),
				Data:      config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "pathological", ClassesPerClient: 2},
				Model:     config.Model{Preset: "tiny-vit", Depth: new(int64(2)), Patch: new(int64(8)), Dim: new(int64(32)), Heads: new(int64(2)), HeadDim: new(int64(16)), MLP: new(int64(64))},
				Algorithm: fl.Settings{Name: alg, Hyper: fl.HyperSettings{Embed: ptr(int64(8)), Hidden: ptr(int64(16))}},
				Train:     config.Train{Rounds: 2, Participation: 0.4, Batch: 16, LR: 0.05, EvalEvery: 1}})
			res, err := Run(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			var s rundir.Summary
			b, _ := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			ev, rounds, err := Evaluate(res.Dir)
			if err != nil || rounds != 2 || ev.Micro != s.FinalMicro {
				t.Fatalf("eval of the checkpoint: %v after %d rounds (%v), want %v", ev.Micro, rounds, err, s.FinalMicro)
			}
			emb, err := os.ReadFile(filepath.Join(res.Dir, "embeddings.csv"))
			if lines := strings.Split(strings.TrimSpace(string(emb)), "\n"); err != nil || len(lines) != 6 || !strings.HasPrefix(lines[0], "client,novel,z0,") || strings.Count(lines[1], ",") != 9 {
				t.Errorf("embeddings.csv: %v\n%s", err, emb)
			}
			ck, _ := os.ReadFile(filepath.Join(res.Dir, "checkpoint.safetensors"))
			for _, name := range []string{"strategy/hyper/embeddings", "strategy/hyper/heads.blocks.1.attn.qkv.weight", "strategy/hyper_momentum/mlp.3.weight"} {
				if !strings.Contains(string(ck), name) {
					t.Errorf("checkpoint lacks %s", name)
				}
			}
		})
	}
}

func TestSuiteComparesAlgorithms(t *testing.T) {
	cfg := filled(config.Config{Name: "suite", Out: t.TempDir(), Suite: []string{"fedavg", "local"},
		Data:  config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "pathological", ClassesPerClient: 2},
		Train: config.Train{Rounds: 2, Participation: 0.4, Batch: 32, LR: 0.05, EvalEvery: 1}})
	res, err := RunSuite(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || !strings.Contains(res.Table, "| fedavg |") || !strings.Contains(res.Table, "| local |") {
		t.Fatalf("table:\n%s", res.Table)
	}
	for _, f := range []string{"results.md", "accuracy.png", "accuracy.svg", "fedavg/summary.json", "local/summary.json"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	// the client updates column: fedavg trains 2 of 5 clients in each of 2 rounds, local (all
	// clients every round, its default schedule) 5 in each
	for name, want := range map[string]int{"fedavg": 4, "local": 10} {
		var row string
		for _, l := range strings.Split(res.Table, "\n") {
			if strings.HasPrefix(l, "| "+name+" |") && strings.Contains(l, "±") {
				row = l
			}
		}
		cells := strings.Split(row, " | ")
		if len(cells) != 8 || cells[6] != fmt.Sprint(want) {
			t.Errorf("%s's row %q: want %d client updates in the seventh column", name, row, want)
		}
	}
	if !strings.Contains(res.Table, "| worst 10% | client updates | wall s |") {
		t.Errorf("table lacks the client updates column:\n%s", res.Table)
	}
	for _, r := range res.Runs {
		b, err := os.ReadFile(filepath.Join(res.Dir, r.Summary.Name, "summary.json"))
		var back rundir.Summary
		if err == nil {
			err = json.Unmarshal(b, &back)
		}
		if err != nil || back.ClientUpdates != r.Summary.ClientUpdates {
			t.Errorf("%s/summary.json: %v, client updates %d, want %d", r.Summary.Name, err, back.ClientUpdates, r.Summary.ClientUpdates)
		}
	}
	cfg.Suite = []string{"fedavg", "fedsgd"}
	if _, err := RunSuite(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "fedsgd") {
		t.Fatalf("unknown suite member: %v", err)
	}
}

// TestFedPerfixFamilySuite: FedPerfix, its plug-in variants and a partial member run on a
// tiny ViT under FedPerfix's evaluation protocol; results.md names the protocol and holds
// the resource table, whose counts follow the roles (FedAvg keeps nothing personal and
// sends everything; FedPerfix keeps its adapters and head).
func TestFedPerfixFamilySuite(t *testing.T) {
	cfg := filled(config.Config{Name: "perfix", Out: t.TempDir(),
		Suite: []string{"fedavg", "fedperfix: algorithm.name=fedperfix; model.prefix.mid=4; algorithm.local_blocks=[1]",
			"prefix-z", "prompts", "adapters: algorithm.name=adapters; model.adapter.mid=3; model.adapter.shared=true"},
		Data:  config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "pathological", ClassesPerClient: 2},
		Model: config.Model{Preset: "tiny-vit", Depth: new(int64(2)), Patch: new(int64(8)), Dim: new(int64(16)), Heads: new(int64(2)), HeadDim: new(int64(8)), MLP: new(int64(16))},
		Train: config.Train{Rounds: 2, Participation: 0.4, Batch: 32, LR: 0.05, EvalEvery: 1, EvalProtocol: "fedperfix"}})
	res, err := RunSuite(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Evaluation protocol (train.eval_protocol): fedperfix", "| fedperfix |", "| prefix-z |", "| prompts |", "| adapters |", "stored params"} {
		if !strings.Contains(res.Table, want) {
			t.Errorf("results.md lacks %q:\n%s", want, res.Table)
		}
	}
	for _, r := range res.Runs {
		rs := r.Summary.Resources
		if r.Summary.Name == "fedavg" {
			if rs.PersonalParams != 0 || rs.UpParams != rs.StoredParams {
				t.Errorf("fedavg resources %+v", rs)
			}
			continue
		}
		if rs.PersonalParams == 0 || rs.UpParams == 0 || rs.PersonalParams+rs.UpParams != rs.StoredParams || rs.DownParams != rs.UpParams {
			t.Errorf("%s resources %+v", r.Summary.Name, rs)
		}
		if r.Summary.EvalProtocol != "fedperfix" {
			t.Errorf("%s protocol %q", r.Summary.Name, r.Summary.EvalProtocol)
		}
	}
}

// TestSensitivitySuite: labelled suite members set their own keys, and suite_table:
// sensitivity lays the partial members out as FedPerfix's Table 1 (stand-alone, with the
// head, overall = their mean).
func TestSensitivitySuite(t *testing.T) {
	cfg := filled(config.Config{Name: "sens", Out: t.TempDir(), SuiteTable: "sensitivity",
		Suite: []string{"local", "fedavg", "head: algorithm.name=partial; algorithm.local_roles=[head]",
			"mlp: algorithm.name=partial; algorithm.local_roles=[mlp]", "mlp+head: algorithm.name=partial; algorithm.local_roles=[mlp, head]"},
		Data:  config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "pathological", ClassesPerClient: 2},
		Model: config.Model{Preset: "tiny-vit", Depth: new(int64(1)), Patch: new(int64(8)), Dim: new(int64(16)), Heads: new(int64(2)), HeadDim: new(int64(8)), MLP: new(int64(16))},
		Train: config.Train{Rounds: 1, Participation: 0.4, Batch: 32, LR: 0.05, EvalEvery: 1}})
	res, err := RunSuite(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]rundir.Summary{}
	for _, r := range res.Runs {
		by[r.Summary.Name] = r.Summary
	}
	if by["mlp"].Resources.PersonalParams == 0 || by["mlp+head"].Resources.PersonalParams <= by["mlp"].Resources.PersonalParams {
		t.Fatalf("members did not get their local roles: %+v", by)
	}
	row := func(s rundir.Summary) string { return fmt.Sprintf("%.2f ± %.2f", 100*s.FinalMean, 100*s.FinalStd) }
	for _, want := range []string{
		"| All Local | " + row(by["local"]) + " | - | - |",
		"| Classification Head | " + row(by["head"]) + " | - | - |",
		fmt.Sprintf("| MLP | %s | %s | %.2f |", row(by["mlp"]), row(by["mlp+head"]), 50*(by["mlp"].FinalMean+by["mlp+head"].FinalMean)),
	} {
		if !strings.Contains(res.Table, want) {
			t.Errorf("results.md lacks %q:\n%s", want, res.Table)
		}
	}
	for _, f := range []string{"gain_density.png", "gain_density.svg", "gains.csv"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range [][]string{{"x: algorithm.name=partial; algorithm.local_blocks=[1]"}, {"x: algorithm.nme=partial"}, {"x: algorithm.local_roles=3"}, {"a/b: algorithm.name=local"}} {
		c := cfg
		c.Suite = bad
		if _, err := RunSuite(context.Background(), c, nil); err == nil {
			t.Errorf("suite %q ran", bad)
		}
	}
}

func TestResizedGreyImagesFeedAnRGBModel(t *testing.T) {
	// FedPerfix's OrganAMNIST path in small: grey 28×28 images resized on the device to
	// 32×32 and repeated to 3 channels, normalized with 0.5, into a tiny-vit for 32×32 RGB
	cfg := filled(config.Config{Name: "resize", Out: t.TempDir(),
		Data:      config.Data{Dataset: "fashion-mnist", TrainSamples: 200, TestSamples: 100, Clients: 4, Partition: "iid", ImageSize: 32, Channels: 3, Normalize: "half", Convention: "fedperfix", TrainFrac: 0.85},
		Model:     config.Model{Preset: "tiny-vit", Depth: new(int64(1)), Patch: new(int64(8)), Dim: new(int64(16)), Heads: new(int64(2)), HeadDim: new(int64(8)), MLP: new(int64(32))},
		Algorithm: fl.Settings{Name: "vanilla-attn"},
		Train:     config.Train{Rounds: 1, Participation: 0.5, Batch: 16}})
	testenv.RequireData(t, "/usr/share/datasets/fashion-mnist", "apt-get install dataset-fashion-mnist")
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(res.Dir, "config.json"))
	if !strings.Contains(string(b), `"image_size": 32`) {
		t.Errorf("config.json does not record the resize: %s", b)
	}
}

// TestSuiteStudiesNovelClients holds clients out of training and checks that every run
// reports the novel-client study: FedTP twice (embedding, hypernetwork), the others once,
// with one accuracy per fine-tuning epoch, in summary.json, novel.csv, the table and a plot.
func TestSuiteStudiesNovelClients(t *testing.T) {
	cfg := filled(config.Config{Name: "novel", Out: t.TempDir(), Suite: []string{"fedtp", "vanilla-t", "fedrod"},
		Data:      config.Data{Dataset: "synthetic:800", Clients: 8, Partition: "iid", HoldOut: 0.25},
		Model:     config.Model{Preset: "tiny-vit", Depth: new(int64(1)), Patch: new(int64(8)), Dim: new(int64(16)), Heads: new(int64(2)), HeadDim: new(int64(8)), MLP: new(int64(32))},
		Algorithm: fl.Settings{Hyper: fl.HyperSettings{Embed: ptr(int64(8)), Hidden: ptr(int64(16))}},
		Train:     config.Train{Rounds: 2, Participation: 0.5, Batch: 32, LR: 0.05, EvalEvery: 1},
		Novel:     config.Novel{Epochs: 2}})
	res, err := RunSuite(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"fedtp": {"embedding", "hypernetwork"}, "vanilla-t": {"personal"}, "fedrod": {"personal"}}
	for _, r := range res.Runs {
		var tuned []string
		for _, n := range r.Summary.Novel {
			tuned = append(tuned, n.Tuned)
			if len(n.Micro) != 3 || len(n.Mean) != 3 {
				t.Errorf("%s (%s): %d epochs recorded, want 3", r.Summary.Name, n.Tuned, len(n.Micro))
			}
			if c := epochsToConverge(n.Micro, cfg.Novel.ConvergeWithin); n.Converged != c || !strings.Contains(res.Table, fmt.Sprintf(" %d |\n", c)) {
				t.Errorf("%s (%s): epochs to converge %d, want %d in summary and table:\n%s", r.Summary.Name, n.Tuned, n.Converged, c, res.Table)
			}
			if !strings.Contains(res.Table, "| "+r.Summary.Name+" ("+n.Tuned+") |") {
				t.Errorf("table lacks %s (%s):\n%s", r.Summary.Name, n.Tuned, res.Table)
			}
		}
		if strings.Join(tuned, ",") != strings.Join(want[r.Summary.Name], ",") {
			t.Errorf("%s tuned %v, want %v", r.Summary.Name, tuned, want[r.Summary.Name])
		}
		b, err := os.ReadFile(filepath.Join(r.Dir, "novel.csv"))
		if err != nil || strings.Count(string(b), "\n") != 1+3*len(tuned) {
			t.Errorf("%s/novel.csv: %v\n%s", r.Summary.Name, err, b)
		}
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "novel.png")); err != nil {
		t.Error(err)
	}
}

// TestRunDirectoryIsLocked refuses a second run into a directory a live run holds, names
// the holder, and needs no clean-up after a holder that is gone (the kernel drops flocks).
func TestRunDirectoryIsLocked(t *testing.T) {
	cfg := filled(config.Config{Name: "locked", Out: t.TempDir(), Data: config.Data{Dataset: "synthetic:300", Clients: 4, Partition: "iid"},
		Train: config.Train{Rounds: 1, Participation: 0.5, Batch: 32}})
	dir := filepath.Join(cfg.Out, cfg.Name)
	unlock, err := rundir.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("pid %d", os.Getpid())
	if _, err := Run(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a run into a locked directory: %v, want an error naming %q", err, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the refused run created %s: %v", dir, err)
	}
	unlock()
	// a lock file left with a PID but no flock held (its process is gone) is no obstacle
	os.WriteFile(filepath.Join(cfg.Out, ".locked.lock"), []byte("1\n"), 0o644)
	if _, err := Run(context.Background(), cfg, nil); err != nil {
		t.Fatalf("a lock nobody holds stopped the run: %v", err)
	}
}

// TestSimultaneousRunsOneWins starts several runs of one name at the same instant: exactly
// one may write the directory, and its metrics are whole.
func TestSimultaneousRunsOneWins(t *testing.T) {
	cfg := filled(config.Config{Name: "race", Out: t.TempDir(), Data: config.Data{Dataset: "synthetic:200", Clients: 4, Partition: "iid"},
		Train: config.Train{Rounds: 2, Participation: 0.5, Batch: 32, EvalEvery: 1}})
	const n = 6
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			_, err := Run(context.Background(), cfg, nil)
			errs <- err
		}()
	}
	close(start)
	ok := 0
	for range n {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case strings.Contains(err.Error(), "is being written by") || strings.Contains(err.Error(), "already holds a run"):
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d simultaneous runs wrote the directory, want exactly 1", ok, n)
	}
	if lines := metricsWithoutTimes(t, filepath.Join(cfg.Out, cfg.Name)); len(lines) != 2 {
		t.Fatalf("metrics.jsonl has %d lines, want 2", len(lines))
	}
}

// TestPFedGPRunsTwoRounds: pfedgp and pfedgp-ip through the whole experiment path at toy
// size (the ConvNet whose head becomes the 84-wide embedding, a pathological split, the GP
// keys): two rounds, evaluated each round, a checkpoint (with pfedgp-ip's inducing inputs)
// whose evaluation reproduces the last round's (the evaluation's GP draws come from fixed
// per-client streams), and a misspelt objective refused with its key.
func TestPFedGPRunsTwoRounds(t *testing.T) {
	for _, alg := range []string{"pfedgp", "pfedgp-ip"} {
		t.Run(alg, func(t *testing.T) { pfedgpRunsTwoRounds(t, alg) })
	}
}

func pfedgpRunsTwoRounds(t *testing.T, alg string) {
	cfg := filled(config.Config{Name: alg, Out: t.TempDir(),
		Data:      config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "pathological", ClassesPerClient: 4},
		Algorithm: fl.Settings{Name: alg},
		Train:     config.Train{Rounds: 2, Participation: 0.4, Batch: 24, LR: 0.05, EvalEvery: 1}})
	fl.EditOwn(&cfg.Algorithm, func(o *algo.PFedGPSettings) {
		o.GibbsDraws, o.GibbsSteps, o.EvalGibbsDraws, o.EvalGibbsSteps, o.Inducing = 4, 2, 5, 2, 3
	})
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var s rundir.Summary
	b, _ := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err := json.Unmarshal(b, &s); err != nil || s.Rounds != 2 || !(s.FinalMicro > 0) {
		t.Fatalf("summary %+v, %v", s, err)
	}
	ev, rounds, err := Evaluate(res.Dir)
	if err != nil || rounds != 2 || ev.Micro != s.FinalMicro {
		t.Fatalf("eval of the checkpoint: %v after %d rounds (%v), want %v", ev.Micro, rounds, err, s.FinalMicro)
	}
	var rc config.Config
	b, _ = os.ReadFile(filepath.Join(res.Dir, "config.json"))
	if err := json.Unmarshal(b, &rc); err != nil || fl.Own[algo.PFedGPSettings](rc.Algorithm).EmbedDim != 84 || fl.Own[algo.PFedGPSettings](rc.Algorithm).Objective != "predictive" {
		t.Fatalf("config.json's pfedgp keys %+v, %v", fl.Own[algo.PFedGPSettings](rc.Algorithm), err)
	}
	if ck, _ := os.ReadFile(filepath.Join(res.Dir, "checkpoint.safetensors")); (alg == "pfedgp-ip") != strings.Contains(string(ck), "inducing.points") {
		t.Errorf("%s: checkpoint holds inducing.points: %v", alg, !(alg == "pfedgp-ip"))
	}
	fl.EditOwn(&cfg.Algorithm, func(o *algo.PFedGPSettings) { o.Objective = "elbo" })
	if err := cfg.Resolved().Validate(); err == nil || !strings.Contains(err.Error(), "algorithm.pfedgp.objective") {
		t.Fatalf("objective elbo: %v", err)
	}
}

// TestRunTrainsOnAPartitionFile: partition file trains the clients the file lists (the run's
// partition.json names the same indices), and a file that does not fit the data is refused
// naming the key and the file.
func TestRunTrainsOnAPartitionFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"train": [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13]], "test": [[0, 1, 2], [3, 4]]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filled(config.Config{Name: "file", Out: dir,
		Data:  config.Data{Dataset: "synthetic:300", Clients: 2, Partition: "file", PartitionFile: good},
		Train: config.Train{Rounds: 1, Participation: 1, Batch: 4, EvalEvery: 1}})
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var m data.Manifest
	b, err := os.ReadFile(filepath.Join(res.Dir, "partition.json"))
	if err != nil || json.Unmarshal(b, &m) != nil || len(m.TrainCount) != 2 {
		t.Fatalf("partition.json %.300s (%v)", b, err)
	}
	for c, want := range []int{8, 6} {
		if n := sumInts(m.TrainCount[c]); n != want || sumInts(m.TestCount[c]) != 3-c {
			t.Errorf("client %d: %d training and %d test samples, want the file's %d and %d", c, n, sumInts(m.TestCount[c]), want, 3-c)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"train": [[0], [100000]], "test": [[0], [1]]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Name, cfg.Data.PartitionFile = "bad", bad
	if _, err := Run(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "data.partition_file") ||
		!strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "index 100000") {
		t.Fatalf("a file indexing past the data: %v, want an error naming data.partition_file and %s", err, bad)
	}
}

func sumInts(xs []int) (n int) {
	for _, x := range xs {
		n += x
	}
	return n
}
