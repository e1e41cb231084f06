package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"pfl/bench/harness"
	"pfl/cuda"
)

// benchCmd runs benchmark workloads (bench/harness) and prints their table. Flags may come
// before or after the workload names. A flag that sizes the workload overrides it only
// when given, so 0 is then an error rather than "the default".
func benchCmd(args []string, out io.Writer) error {
	fs := newFlags("bench", out)
	dev := fs.String("device", "cpu", "cpu, cuda or cuda:N")
	size := fs.String("size", "auto", "small (seconds on a CPU: tiny data, 2 blocks per stage, 32-pixel inputs), full, or auto: small on the CPU, full on CUDA")
	jsonPath := fs.String("json", "", "also write the reports to this JSON file")
	precision := fs.String("precision", "fp32", "fp32, tf32 (CUDA matmuls in TF32) or bf16 (autocast over float32 weights)")
	eager := fs.Bool("eager", false, "run the training steps eagerly on CUDA instead of replaying them as CUDA graphs")
	ints := []struct {
		name, usage string
		least       int // the smallest value the flag takes
		field       func(*harness.Workload) *int
	}{
		{"warmup", "untimed rounds before timing", 0, func(w *harness.Workload) *int { return &w.Warmup }},
		{"measure", "timed rounds", 1, func(w *harness.Workload) *int { return &w.Measure }},
		{"clients", "clients N", 1, func(w *harness.Workload) *int { return &w.Clients }},
		{"per-round", "clients sampled per round K", 1, func(w *harness.Workload) *int { return &w.PerRound }},
		{"epochs", "local epochs", 1, func(w *harness.Workload) *int { return &w.Epochs }},
		{"batch", "samples per client per step", 1, func(w *harness.Workload) *int { return &w.Batch }},
		{"samples", "training samples per client", 1, func(w *harness.Workload) *int { return &w.TrainPerClient }},
		{"test-samples", "test samples per client", 1, func(w *harness.Workload) *int { return &w.TestPerClient }},
		{"rounds", "rounds of the full run (for the projection)", 1, func(w *harness.Workload) *int { return &w.Rounds }},
		{"eval-every", "rounds between evaluations of the full run (0: after the last only)", 0, func(w *harness.Workload) *int { return &w.EvalEvery }},
		{"eval-chunk", "clients per stacked evaluation pass (0: clients per round)", 0, func(w *harness.Workload) *int { return &w.EvalChunk }},
		{"checkpoint-every", "rounds between checkpoints of the full run (0: pfl train's default)", 0, func(w *harness.Workload) *int { return &w.CheckpointEvery }},
	}
	vals := make([]int, len(ints))
	for i, f := range ints {
		fs.IntVar(&vals[i], f.name, 0, f.usage+" (default: the workload's)")
	}
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: pfl bench [flags] <workload>... | all")
		listWorkloads(out)
		fmt.Fprintln(out, "\nFlags:")
		fs.PrintDefaults()
	}
	names, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintln(out, "pfl bench: name a workload (or all)")
		fs.Usage()
		return errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for i, f := range ints {
		if set[f.name] && vals[i] < f.least {
			return fmt.Errorf("-%s %d (%s): want >= %d", f.name, vals[i], f.usage, f.least)
		}
	}
	var ws []harness.Workload
	for _, n := range names {
		if n == "all" {
			ws = append(ws, harness.Workloads()...)
			continue
		}
		w, err := harness.Lookup(n)
		if err != nil {
			fmt.Fprintf(out, "pfl bench: unknown workload %q\n", n)
			listWorkloads(out)
			return errUsage
		}
		ws = append(ws, w)
	}
	d, err := cuda.ParseDevice(*dev)
	if err != nil {
		return err
	}
	if *size != "small" && *size != "full" && *size != "auto" {
		return fmt.Errorf("-size %q: want small, full or auto", *size)
	}
	small := *size == "small" || (*size == "auto" && !d.IsCUDA())
	if p := *precision; p != "fp32" && p != "tf32" && p != "bf16" {
		return fmt.Errorf("-precision %q: want fp32, tf32 or bf16", p)
	}
	if err := harness.CheckDevice(d); err != nil {
		return err
	}
	var jsonFile *os.File
	if *jsonPath != "" { // created now: a bad path should not wait for minutes of GPU work
		if jsonFile, err = os.Create(*jsonPath); err != nil {
			return err
		}
		defer jsonFile.Close()
	}
	var reports []*harness.Report
	for _, w := range ws {
		if small {
			w = w.Small()
		}
		w.Precision = *precision
		w.Eager = *eager
		for i, f := range ints {
			if set[f.name] {
				*f.field(&w) = vals[i]
			}
		}
		if err := w.Validate(); err != nil { // before the line that describes the workload
			return err
		}
		scale := "full size"
		if small {
			scale = "small (checks the harness; not the engine's speed)"
		}
		fmt.Fprintf(out, "%s on %s, %s: %s@%d, %d of %d clients per round, epochs %d, %d samples per client, batch %d; %d warm-up + %d timed rounds\n",
			w.Name, d, scale, w.Model.Preset, w.Model.Image, w.PerRound, w.Clients, w.Epochs, w.TrainPerClient, w.Batch, w.Warmup, w.Measure)
		r, err := harness.Run(w, d)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	fmt.Fprintln(out)
	if err := harness.WriteTable(out, reports); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nTFLOP/s: 6·MACs per training sample over training time; MFU against a matmul peak measured in this process",
		fmt.Sprintf("(fp32 %.2f TFLOP/s%s).", reports[0].PeakFP32, bf16Note(reports[0])))
	if jsonFile == nil {
		return nil
	}
	if err := harness.WriteJSON(jsonFile, reports); err != nil {
		return err
	}
	if err := jsonFile.Close(); err != nil {
		return err
	}
	fmt.Fprintln(out, "wrote", *jsonPath)
	return nil
}

// bf16Note names the bfloat16 peak where one was measured (CUDA).
func bf16Note(r *harness.Report) string {
	if r.PeakBF16 <= 0 {
		return ""
	}
	return fmt.Sprintf(", bf16 %.1f TFLOP/s", r.PeakBF16)
}

// listWorkloads prints the workloads' names and summaries.
func listWorkloads(out io.Writer) {
	fmt.Fprintln(out, "\nWorkloads:")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, w := range harness.Workloads() {
		fmt.Fprintf(tw, "  %s\t%s\n", w.Name, w.Summary)
	}
	fmt.Fprintf(tw, "  %s\t%s\n", "all", "every workload, in this order")
	tw.Flush()
}
