package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"pfl/cuda"
	"pfl/engine/fl"
)

// Report is what Run measured for one workload. Times are seconds; rates are per second;
// MFU is a fraction. Zero peaks were not measured (bfloat16 on the CPU), and PeakMemory is
// -1 where the device has no allocator statistics (the CPU).
type Report struct {
	Workload  string `json:"workload"`
	Device    string `json:"device"`
	Size      string `json:"size"` // full, or small (see Workload.Small)
	Precision string `json:"precision"`
	Model     string `json:"model"`
	Image     int64  `json:"image"`
	Algorithm string `json:"algorithm"`

	Clients        int `json:"clients"`
	PerRound       int `json:"per_round"`
	Epochs         int `json:"epochs"`
	Batch          int `json:"batch"`
	TrainPerClient int `json:"train_per_client"`
	TestPerClient  int `json:"test_per_client"`
	Rounds         int `json:"rounds"`     // of the full run
	EvalEvery      int `json:"eval_every"` // of the full run
	Evals          int `json:"evals"`      // evaluations in the full run

	Params int64 `json:"params"` // one client's model
	MACs   int64 `json:"macs"`   // one sample's forward multiply-accumulates

	MeasuredRounds int `json:"measured_rounds"`
	Samples        int `json:"samples"`      // training samples of the timed rounds
	EvalSamples    int `json:"eval_samples"` // test samples of one evaluation
	Saves          int `json:"saves"`        // checkpoints in the full run

	// A timed round's split, means over the timed rounds: Data (planning and loading the
	// clients' batches) + Train (local training) + Server (the server's steps: Generate,
	// FedTP's hypernetwork generating the round's parameters, and Aggregate) + Other (what
	// no phase claims: sampling, releasing the CPU cache between phases) = Round, the
	// round's synchronized wall time.
	DataS       float64 `json:"time_data_s"`
	TrainS      float64 `json:"time_train_s"`
	ServerS     float64 `json:"time_server_s"`
	GenerateS   float64 `json:"time_generate_s"`
	AggregateS  float64 `json:"time_aggregate_s"`
	OtherS      float64 `json:"time_other_s"`
	RoundS      float64 `json:"time_round_s"`
	EvalS       float64 `json:"time_eval_s"`       // one evaluation of every client
	CheckpointS float64 `json:"time_checkpoint_s"` // one checkpoint, as pfl train saves it
	// PerRoundS is the full run's mean wall time per round: Round plus its share of the
	// run's evaluations and checkpoints, (Evals·Eval + Saves·Checkpoint)/Rounds.
	PerRoundS float64 `json:"time_per_round_s"`

	SamplesPerSec float64 `json:"samples_per_sec"` // training samples / local training time (Train)
	TrainTFLOPS   float64 `json:"train_tflops"`    // 6·MACs·samples / training time
	EvalTFLOPS    float64 `json:"eval_tflops"`     // 2·MACs·eval samples / evaluation time
	PeakFP32      float64 `json:"peak_fp32_tflops"`
	PeakBF16      float64 `json:"peak_bf16_tflops"`
	MFU           float64 `json:"mfu_fp32"` // TrainTFLOPS / PeakFP32
	MFUBF16       float64 `json:"mfu_bf16"` // TrainTFLOPS / PeakBF16

	PeakMemory   int64 `json:"peak_memory_bytes"`
	HandleGrowth int64 `json:"handle_growth"`       // live tensor handles after the timed rounds minus before
	MemoryGrowth int64 `json:"memory_growth_bytes"` // CUDA bytes allocated after the timed rounds minus before

	// Graphs is how many training steps were captured as CUDA graphs (one per model and
	// phase; 0 on the CPU or eager), GraphError the last capture that failed (that phase
	// then ran eagerly).
	Graphs     int    `json:"graphs"`
	GraphError string `json:"graph_error,omitempty"`

	TotalFLOPs float64 `json:"total_flops"` // the full run, by the package's convention
	ProjectedS float64 `json:"projected_s"` // Rounds × round + Evals × evaluation + Saves × checkpoint
	FloorS     float64 `json:"floor_s"`     // TotalFLOPs at the best measured peak
}

func newReport(w Workload, dev cuda.Device, macs, params int64) *Report {
	c := w.Cost(macs)
	size, prec := w.Size, w.Precision
	if size == "" {
		size = "full"
	}
	if prec == "" {
		prec = "fp32"
	}
	return &Report{Workload: w.Name, Device: dev.String(), Size: size, Precision: prec, Model: w.Model.Preset, Image: w.Model.Image, Algorithm: w.Algorithm.Name,
		Clients: w.Clients, PerRound: w.PerRound, Epochs: w.Epochs, Batch: w.Batch,
		TrainPerClient: w.TrainPerClient, TestPerClient: w.TestPerClient,
		Rounds: w.Rounds, EvalEvery: w.EvalEvery, Evals: c.Evals, Saves: Evaluations(w.Rounds, w.checkpointEvery()), Params: params, MACs: macs,
		PeakMemory: -1, TotalFLOPs: c.Total}
}

// measured fills the rates, the time split and the projection from the timed rounds
// (their metrics, synchronized wall times and the checkpoints after them) and one
// evaluation; the peaks must be set.
func (r *Report) measured(rounds []fl.RoundMetrics, walls, saves []time.Duration, eval time.Duration, evalSamples int) {
	var d, t, g, a, wall, ckpt time.Duration
	r.Samples = 0
	for i, m := range rounds {
		d, t, g, a = d+m.Time.Data, t+m.Time.Train-m.Time.Generate, g+m.Time.Generate, a+m.Time.Aggregate
		wall, ckpt = wall+walls[i], ckpt+saves[i]
		r.Samples += m.Samples
	}
	n := float64(len(rounds))
	r.MeasuredRounds = len(rounds)
	r.DataS, r.TrainS, r.RoundS = d.Seconds()/n, t.Seconds()/n, wall.Seconds()/n
	r.GenerateS, r.AggregateS = g.Seconds()/n, a.Seconds()/n
	r.ServerS = r.GenerateS + r.AggregateS
	r.OtherS = r.RoundS - r.DataS - r.TrainS - r.ServerS
	r.CheckpointS = ckpt.Seconds() / n
	r.EvalS, r.EvalSamples = eval.Seconds(), evalSamples
	r.SamplesPerSec = float64(r.Samples) / t.Seconds()
	r.TrainTFLOPS = 6 * float64(r.MACs) * r.SamplesPerSec / 1e12
	r.EvalTFLOPS = 2 * float64(r.MACs) * float64(evalSamples) / eval.Seconds() / 1e12
	if r.PeakFP32 > 0 {
		r.MFU = r.TrainTFLOPS / r.PeakFP32
	}
	if r.PeakBF16 > 0 {
		r.MFUBF16 = r.TrainTFLOPS / r.PeakBF16
	}
	r.ProjectedS = Project(r.Rounds, r.EvalEvery, r.RoundS, r.EvalS) + float64(r.Saves)*r.CheckpointS
	r.PerRoundS = r.ProjectedS / float64(r.Rounds)
	if peak := max(r.PeakFP32, r.PeakBF16); peak > 0 {
		r.FloorS = r.TotalFLOPs / (peak * 1e12)
	}
}

// Project is the wall time in seconds of a run of rounds rounds evaluated every
// evalEvery rounds (and after the last), from one round's and one evaluation's time.
func Project(rounds, evalEvery int, round, eval float64) float64 {
	return float64(rounds)*round + float64(Evaluations(rounds, evalEvery))*eval
}

// WriteTable writes one row per report: throughput and MFU, the mean round's split,
// one evaluation, the peak device memory and the full run's projected wall time.
func WriteTable(out io.Writer, reports []*Report) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tdevice\tsize\tprecision\tgraphs\tmodel\tK/N\tsamples/s\tTFLOP/s\tMFU fp32\tMFU bf16\tpeak mem\tprojected\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s@%d\t%d/%d\t%.0f\t%.3f\t%s\t%s\t%s\t%s (%d rounds, %d evals, %d saves)\t\n",
			r.Workload, r.Device, r.Size, r.Precision, graphCell(r), r.Model, r.Image, r.PerRound, r.Clients, r.SamplesPerSec, r.TrainTFLOPS,
			percent(r.MFU, r.PeakFP32), percent(r.MFUBF16, r.PeakBF16),
			bytes(r.PeakMemory), seconds(r.ProjectedS), r.Rounds, r.Evals, r.Saves)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nWhere a round's time goes (means over the timed rounds; a timed round = data + train + server + other; per round of the full run = round + its share of the evaluations and checkpoints):")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tdata\ttrain\tserver\t(generate\taggregate)\tother\tround\teval (one)\tcheckpoint (one)\tper round of the full run\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s)\t%s\t%s\t%s\t%s\t%s\t\n", r.Workload,
			seconds(r.DataS), seconds(r.TrainS), seconds(r.ServerS), "("+seconds(r.GenerateS), seconds(r.AggregateS),
			seconds(r.OtherS), seconds(r.RoundS), seconds(r.EvalS), seconds(r.CheckpointS), seconds(r.PerRoundS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range reports {
		if r.GraphError != "" {
			fmt.Fprintf(out, "%s: a capture failed, its phase ran eagerly: %s\n", r.Workload, r.GraphError)
		}
		if r.HandleGrowth != 0 || r.MemoryGrowth != 0 {
			fmt.Fprintf(out, "%s: live tensors changed by %+d and allocated device memory by %+d bytes over the timed rounds\n", r.Workload, r.HandleGrowth, r.MemoryGrowth)
		}
	}
	return nil
}

// graphCell says how the training steps ran: the number of captured CUDA graphs, eager,
// or eager after a failed capture.
func graphCell(r *Report) string {
	switch {
	case r.GraphError != "":
		return fmt.Sprintf("%d, failed", r.Graphs)
	case r.Graphs > 0:
		return fmt.Sprint(r.Graphs)
	}
	return "eager"
}

// WriteJSON writes the reports as an indented JSON array.
func WriteJSON(out io.Writer, reports []*Report) error {
	b, err := json.MarshalIndent(reports, "", "  ")
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}

// percent writes a fraction as a percentage, or n/a when its peak was not measured.
func percent(f, peak float64) string {
	if peak <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*f)
}

// seconds writes s at a precision that suits its size (1.234ms, 850ms, 2.31s, 4m37s).
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d < 10*time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	case d < time.Second:
		d = d.Round(time.Millisecond)
	case d < time.Minute:
		d = d.Round(10 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return d.String()
}

// bytes writes a byte count in GiB or MiB, or n/a when negative (not measured).
func bytes(n int64) string {
	switch {
	case n < 0:
		return "n/a"
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
