package harness

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"pfl/cuda"
	"pfl/engine/fl"
)

// TestCostByHand checks the FLOP accounting against MACs counted by hand from the ViT's
// shapes: patch embedding n·C·p²·D, per block t·D·3·inner (Q/K/V), 2·t²·inner
// (QKᵀ and ·V), t·inner·D (output), 2·t·D·MLP (feed-forward), and D·classes for the head.
func TestCostByHand(t *testing.T) {
	w := Workload{Name: "hand", Classes: 3, Clients: 4, PerRound: 2, Epochs: 3, Batch: 5,
		TrainPerClient: 10, TestPerClient: 5, Rounds: 7, EvalEvery: 3}
	cases := []struct {
		name    string
		spec    ModelSpec
		classes int64
		macs    int64
	}{
		// tiny-vit at 8×8, depth 1: n = 4 patches of 4×4×3, t = 5 tokens, D 128, inner 8·64, MLP 256
		{"tiny-vit@8/d1", ModelSpec{Preset: "tiny-vit", Image: 8, Depth: 1}, 3,
			4*48*128 + 5*128*3*512 + 2*25*512 + 5*512*128 + 2*5*128*256 + 128*3}, // 1,688,960
		// vit-s16 at 32×32, depth 1: n = 4 patches of 16×16×3, t = 5, D 384, inner 6·64, MLP 1536
		{"vit-s16@32/d1", ModelSpec{Preset: "vit-s16", Image: 32, Depth: 1}, 100,
			4*768*384 + 5*384*3*384 + 2*25*384 + 5*384*384 + 2*5*384*1536 + 384*100}, // 10,084,608
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			macs, _, err := c.spec.Count(c.classes)
			if err != nil {
				t.Fatal(err)
			}
			if macs != c.macs {
				t.Fatalf("MACs = %d, want %d by hand", macs, c.macs)
			}
			got := w.Cost(macs)
			m := float64(c.macs)
			want := Cost{MACs: c.macs, TrainStep: 6 * m,
				Round: 6 * m * 2 * 3 * 10, // K clients × epochs × samples each
				Eval:  2 * m * 4 * 5,      // N clients × test samples each
				Evals: 3}                  // rounds 3 and 6, and the last (7)
			want.Total = 7*want.Round + 3*want.Eval
			if got != want {
				t.Errorf("Cost = %+v, want %+v", got, want)
			}
		})
	}
}

func TestEvaluationsAndProject(t *testing.T) {
	cases := []struct {
		rounds, every, evals int
		round, eval, want    float64
	}{
		{1500, 5, 300, 0.2, 1, 1500*0.2 + 300},
		{50, 1, 50, 30, 5, 50*30 + 50*5},
		{7, 3, 3, 1, 10, 7 + 30},  // after rounds 3 and 6, and after the last
		{10, 0, 1, 2, 100, 120},   // only after the last
		{2000, 5, 400, 0, 1, 400}, // evaluation alone
	}
	for _, c := range cases {
		if got := Evaluations(c.rounds, c.every); got != c.evals {
			t.Errorf("Evaluations(%d, %d) = %d, want %d", c.rounds, c.every, got, c.evals)
		}
		if got := Project(c.rounds, c.every, c.round, c.eval); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Project(%d, %d, %g, %g) = %g, want %g", c.rounds, c.every, c.round, c.eval, got, c.want)
		}
	}
}

// TestMeasured checks the rates, the time split and the projection a report derives from
// timed rounds: the split's parts add up to the round, what no phase claims included.
func TestMeasured(t *testing.T) {
	w := Workload{Name: "w", Clients: 20, PerRound: 2, Rounds: 100, EvalEvery: 10, CheckpointEvery: 25}
	r := newReport(w, cuda.CPU, 1e9, 5)
	r.PeakFP32 = 10
	ms := time.Millisecond
	round := fl.RoundMetrics{Samples: 1000, Time: fl.Timing{Data: 500 * ms, Train: 2100 * ms, Generate: 100 * ms, Aggregate: 500 * ms}}
	r.measured([]fl.RoundMetrics{round, round}, []time.Duration{3700 * ms, 3700 * ms}, []time.Duration{800 * ms, 1200 * ms}, 4*time.Second, 500)
	cases := []struct {
		name      string
		got, want float64
	}{
		{"samples/s", r.SamplesPerSec, 2000.0 / 4},           // local training time only
		{"train TFLOP/s", r.TrainTFLOPS, 6e9 * 500 / 1e12},   // 6·MACs per sample
		{"eval TFLOP/s", r.EvalTFLOPS, 2e9 * 500 / 4 / 1e12}, // 2·MACs per sample
		{"MFU", r.MFU, 0.3},
		{"round", r.RoundS, 3.7},
		{"data", r.DataS, 0.5},
		{"train", r.TrainS, 2},           // Train less the generation
		{"server", r.ServerS, 0.6},       // generation and aggregation
		{"other", r.OtherS, 3.7 - 3.1},   // what no phase claims
		{"checkpoint", r.CheckpointS, 1}, // mean of the timed saves
		{"saves", float64(r.Saves), 4},   // rounds 25, 50, 75, 100
		{"projected", r.ProjectedS, 100*3.7 + 10*4 + 4*1},
		{"per round", r.PerRoundS, 3.7 + (10*4+4*1)/100.0},
		{"floor", r.FloorS, r.TotalFLOPs / 10e12},
	}
	for _, c := range cases {
		if math.Abs(c.got-c.want) > 1e-9*math.Abs(c.want) {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if r.MFUBF16 != 0 || r.PeakMemory != -1 || r.Size != "full" {
		t.Errorf("bf16 MFU %g, peak memory %d, size %q: want 0, -1 (not measured) and full", r.MFUBF16, r.PeakMemory, r.Size)
	}
	w.CheckpointEvery = 0 // pfl train's default
	if got, want := newReport(w, cuda.CPU, 1, 1).Saves, Evaluations(100, defaultCheckpointEvery); got != want {
		t.Errorf("saves with the default cadence = %d, want %d", got, want)
	}
}

// checkSplit checks a measured report's invariant: data + train + server + other is the
// round, with other (what no phase claims) never negative and every part a time.
func checkSplit(t *testing.T, r *Report) {
	t.Helper()
	parts := map[string]float64{"data": r.DataS, "train": r.TrainS, "generate": r.GenerateS, "aggregate": r.AggregateS,
		"other": r.OtherS, "eval": r.EvalS, "checkpoint": r.CheckpointS}
	for name, v := range parts {
		if v < 0 || math.IsNaN(v) {
			t.Errorf("%s = %g s, want a time >= 0", name, v)
		}
	}
	if sum := r.DataS + r.TrainS + r.ServerS + r.OtherS; math.Abs(sum-r.RoundS) > 1e-9*r.RoundS {
		t.Errorf("data %g + train %g + server %g + other %g = %g s, want the round's %g s", r.DataS, r.TrainS, r.ServerS, r.OtherS, sum, r.RoundS)
	}
	if math.Abs(r.ServerS-r.GenerateS-r.AggregateS) > 1e-12 {
		t.Errorf("server %g s is not generate %g + aggregate %g", r.ServerS, r.GenerateS, r.AggregateS)
	}
	if r.TrainS <= 0 || r.CheckpointS <= 0 || r.EvalS <= 0 {
		t.Errorf("train %g, checkpoint %g, eval %g s: want each measured (> 0)", r.TrainS, r.CheckpointS, r.EvalS)
	}
}

// TestWorkloads pins the workloads' full-size settings and checks every workload validates,
// full and small.
func TestWorkloads(t *testing.T) {
	want := []struct {
		name                                              string
		clients, perRound, epochs, batch, samples, rounds int
		preset                                            string
		image                                             int64
	}{
		{"fedtp-c100-50", 50, 5, 5, 64, 1000, 1500, "tiny-vit", 32},
		{"fedtp-c100-100", 100, 5, 5, 64, 1000, 1500, "tiny-vit", 32},
		{"fedperfix-vits", 64, 8, 10, 64, 703, 50, "vit-s16", 224},
		{"transfed-c100", 100, 10, 5, 64, 500, 2000, "focalnet-cifar", 32},
	}
	if len(Workloads()) != len(want) {
		t.Fatalf("%d workloads, want %d", len(Workloads()), len(want))
	}
	for i, c := range want {
		w := Workloads()[i]
		got := []int{w.Clients, w.PerRound, w.Epochs, w.Batch, w.TrainPerClient, w.Rounds}
		exp := []int{c.clients, c.perRound, c.epochs, c.batch, c.samples, c.rounds}
		if w.Name != c.name || w.Model.Preset != c.preset || w.Model.Image != c.image || !equal(got, exp) {
			t.Errorf("workload %d: %s %s@%d %v, want %s %s@%d %v", i, w.Name, w.Model.Preset, w.Model.Image, got, c.name, c.preset, c.image, exp)
		}
		for _, v := range []Workload{w, w.Small()} {
			if err := v.Validate(); err != nil {
				t.Errorf("%s (%s): %v", v.Name, v.Size, err)
			}
		}
	}
}

func equal(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestInvalid(t *testing.T) {
	base, _ := Lookup("fedtp-c100-50")
	cases := []struct {
		desc    string
		edit    func(w *Workload)
		mention string
	}{
		{"more per round than clients", func(w *Workload) { w.PerRound = 51 }, "per round"},
		{"no timed round", func(w *Workload) { w.Measure = 0 }, "timed rounds"},
		{"no samples", func(w *Workload) { w.TrainPerClient = 0 }, "samples per client"},
		{"negative checkpoint cadence", func(w *Workload) { w.CheckpointEvery = -1 }, "checkpoint every"},
		{"unknown algorithm", func(w *Workload) { w.Algorithm.Name = "fedfoo" }, "algorithm.name"},
		{"unknown generated role", func(w *Workload) { w.Algorithm.Generate = []string{"qkv"} }, "algorithm.generate"},
		{"patch does not divide", func(w *Workload) { w.Model.Image = 30 }, "tiny-vit"},
		{"no such model", func(w *Workload) { w.Model.Preset = "lstm" }, "model lstm has no Classes"},
	}
	for _, c := range cases {
		w := base
		c.edit(&w)
		if err := w.Validate(); err == nil || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: err %v, want one mentioning %q", c.desc, err, c.mention)
		}
	}
	if _, err := Lookup("nope"); !errors.Is(err, ErrUnknownWorkload) || !strings.Contains(err.Error(), "fedtp-c100-50") {
		t.Errorf("Lookup(nope): %v, want ErrUnknownWorkload listing the names", err)
	}
}

// TestRunSmall runs a small workload end to end on the CPU.
func TestRunSmall(t *testing.T) {
	w, _ := Lookup("fedperfix-vits")
	w = w.Small()
	w.Measure = 2
	r, err := Run(w, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if r.Samples != 2*2*16 || r.EvalSamples != 4*8 || r.MeasuredRounds != 2 {
		t.Errorf("samples %d, eval samples %d, rounds %d; want 64, 32, 2", r.Samples, r.EvalSamples, r.MeasuredRounds)
	}
	if !(r.TrainTFLOPS > 0 && r.PeakFP32 > 0 && r.MFU > 0 && r.ProjectedS > 0) || r.PeakBF16 != 0 || r.PeakMemory != -1 {
		t.Errorf("report %+v: want positive rates, peak and projection; no bf16 peak or memory on the CPU", r)
	}
	if r.HandleGrowth != 0 {
		t.Errorf("%d tensor handles more after the timed rounds than before", r.HandleGrowth)
	}
	if r.Algorithm != "vanilla-attn" || r.Size != "small" {
		t.Errorf("algorithm %q size %q, want vanilla-attn small", r.Algorithm, r.Size)
	}
	checkSplit(t, r)
	if r.GenerateS != 0 {
		t.Errorf("generate %g s, want 0: vanilla-attn generates nothing", r.GenerateS)
	}
}

// TestRunSmallGenerates runs FedTP's small workload: its hypernetwork's generation is a
// server step, timed apart from local training, and the split still adds up.
func TestRunSmallGenerates(t *testing.T) {
	w, _ := Lookup("fedtp-c100-50")
	r, err := Run(w.Small(), cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	checkSplit(t, r)
	if r.GenerateS <= 0 {
		t.Errorf("generate %g s, want > 0: FedTP generates every round", r.GenerateS)
	}
}

// TestCheckDevice: a device the library cannot use fails before any setup, whether the
// library was built without CUDA or sees fewer devices.
func TestCheckDevice(t *testing.T) {
	if err := CheckDevice(cuda.CPU); err != nil {
		t.Fatalf("CheckDevice(cpu): %v", err)
	}
	if err := CheckDevice(cuda.CUDA(99)); err == nil || !strings.Contains(err.Error(), "cuda:99") {
		t.Errorf("CheckDevice(cuda:99): %v, want an error naming the device", err)
	}
}
