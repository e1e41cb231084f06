package main

import (
	"fmt"
	"io"

	"pfl/cuda"
	"pfl/engine/smoke"
)

// smoke trains a small MLP end to end and fails unless it learned and leaked nothing.
func smokeCmd(args []string, out io.Writer) error {
	fs := newFlags("smoke", out)
	dev := fs.String("device", "cpu", "cpu, cuda or cuda:N")
	steps := fs.Int("steps", 200, "full-batch SGD steps")
	seed := fs.Uint64("seed", 1, "seed of every random stream")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *steps < 1 {
		// Config reads 0 as "default"; on the command line it is a mistake.
		return fmt.Errorf("-steps = %d, want >= 1", *steps)
	}
	d, err := cuda.ParseDevice(*dev)
	if err != nil {
		return err
	}
	cfg := smoke.Config{Device: d, Steps: *steps, Seed: *seed}
	res, err := smoke.Run(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "MLP on 4 Gaussian classes (dim 16), %d steps on %s\n", *steps, d)
	fmt.Fprintf(out, "loss             %.4f -> %.4f\n", res.FirstLoss, res.FinalLoss)
	fmt.Fprintf(out, "held-out accuracy %.3f\n", res.TestAccuracy)
	fmt.Fprintf(out, "time per step    %v\n", res.StepTime)
	fmt.Fprintf(out, "leaked tensors   %d\n", res.LeakedTensors)
	if res.LeakedTensors != 0 {
		return fmt.Errorf("%d tensor handles leaked", res.LeakedTensors)
	}
	if res.TestAccuracy < 0.9 {
		return fmt.Errorf("held-out accuracy %.3f below 0.9: training is broken", res.TestAccuracy)
	}
	fmt.Fprintln(out, "ok")
	return nil
}
