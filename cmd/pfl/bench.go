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

// benchInt is a flag of pfl bench that overrides one count of a workload when given.
type benchInt struct {
	name, usage string
	least       int // the smallest value the flag takes
	field       func(*harness.Workload) *int
}

// benchInts are pfl bench's overrides of a workload's counts.
var benchInts = []benchInt{
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

// benchOptions are pfl bench's choices beside the workloads.
type benchOptions struct {
	dev       cuda.Device
	small     bool
	precision string
	eager     bool
	jsonPath  string
	ints      map[string]int // the overrides given (benchInts)
}

// benchCmd runs benchmark workloads (bench/harness) and prints their table. Flags may come
// before or after the workload names. A flag that sizes the workload overrides it only
// when given, so 0 is then an error rather than "the default".
func benchCmd(args []string, out io.Writer) error {
	o, ws, err := parseBench(args, out)
	if err != nil {
		return err
	}
	if err := harness.CheckDevice(o.dev); err != nil {
		return err
	}
	var jsonFile *os.File
	if o.jsonPath != "" { // created now: a bad path should not wait for minutes of GPU work
		if jsonFile, err = os.Create(o.jsonPath); err != nil {
			return err
		}
		defer jsonFile.Close()
	}
	var reports []*harness.Report
	for _, w := range ws {
		r, err := o.run(w, out)
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
	fmt.Fprintln(out, "wrote", o.jsonPath)
	return nil
}

// parseBench reads pfl bench's flags and workloads, refusing a value no run could take.
func parseBench(args []string, out io.Writer) (*benchOptions, []harness.Workload, error) {
	fs := newFlags("bench", out)
	dev := fs.String("device", "cpu", "cpu, cuda or cuda:N")
	size := fs.String("size", "auto", "small (seconds on a CPU: tiny data, 2 blocks per stage, 32-pixel inputs), full, or auto: small on the CPU, full on CUDA")
	o := &benchOptions{ints: map[string]int{}}
	fs.StringVar(&o.jsonPath, "json", "", "also write the reports to this JSON file")
	fs.StringVar(&o.precision, "precision", "fp32", "fp32, tf32 (CUDA matmuls in TF32) or bf16 (autocast over float32 weights)")
	fs.BoolVar(&o.eager, "eager", false, "run the training steps eagerly on CUDA instead of replaying them as CUDA graphs")
	vals := make([]int, len(benchInts))
	for i, f := range benchInts {
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
		return nil, nil, err
	}
	if len(names) == 0 {
		fmt.Fprintln(out, "pfl bench: name a workload (or all)")
		fs.Usage()
		return nil, nil, errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for i, f := range benchInts {
		if set[f.name] && vals[i] < f.least {
			return nil, nil, fmt.Errorf("-%s %d (%s): want >= %d", f.name, vals[i], f.usage, f.least)
		}
		if set[f.name] {
			o.ints[f.name] = vals[i]
		}
	}
	ws, err := workloads(names, out)
	if err != nil {
		return nil, nil, err
	}
	if o.dev, err = cuda.ParseDevice(*dev); err != nil {
		return nil, nil, err
	}
	if *size != "small" && *size != "full" && *size != "auto" {
		return nil, nil, fmt.Errorf("-size %q: want small, full or auto", *size)
	}
	o.small = *size == "small" || (*size == "auto" && !o.dev.IsCUDA())
	if p := o.precision; p != "fp32" && p != "tf32" && p != "bf16" {
		return nil, nil, fmt.Errorf("-precision %q: want fp32, tf32 or bf16", p)
	}
	return o, ws, nil
}

// workloads are the workloads names names ("all": every one), or errUsage after the list
// of them for a name that is none.
func workloads(names []string, out io.Writer) ([]harness.Workload, error) {
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
			return nil, errUsage
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// run sizes workload w as the options say, describes it on out and runs it.
func (o *benchOptions) run(w harness.Workload, out io.Writer) (*harness.Report, error) {
	if o.small {
		w = w.Small()
	}
	w.Precision, w.Eager = o.precision, o.eager
	for _, f := range benchInts {
		if v, ok := o.ints[f.name]; ok {
			*f.field(&w) = v
		}
	}
	if err := w.Validate(); err != nil { // before the line that describes the workload
		return nil, err
	}
	scale := "full size"
	if o.small {
		scale = "small (checks the harness; not the engine's speed)"
	}
	fmt.Fprintf(out, "%s on %s, %s: %s@%d, %d of %d clients per round, epochs %d, %d samples per client, batch %d; %d warm-up + %d timed rounds\n",
		w.Name, o.dev, scale, w.Model.Preset, w.Model.Image, w.PerRound, w.Clients, w.Epochs, w.TrainPerClient, w.Batch, w.Warmup, w.Measure)
	return harness.Run(w, o.dev)
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
