package main

import (
	"fmt"
	"io"

	"pfl/engine/experiment"
	"pfl/engine/rundir"
)

// evalCmd evaluates every client's personalized model from the last checkpoint of a run,
// or of every run of a suite or grid.
func evalCmd(args []string, out io.Writer) error {
	fs := newFlags("eval", out)
	perClient := fs.Bool("clients", false, "print every client's accuracy")
	pos, err := parseArgs(fs, args, 1, 1, "pfl eval [-clients] <run, suite or grid dir>")
	if err != nil {
		return err
	}
	runs, err := rundir.Runs(pos[0])
	if err != nil {
		return err
	}
	if len(runs) == 1 {
		return evalRun(runs[0].Dir, *perClient, out)
	}
	// a suite or grid: every run with a checkpoint, the others named
	done, failed := 0, 0
	for _, r := range runs {
		if !r.Checkpoint {
			fmt.Fprintf(out, "%s: no checkpoint yet (not evaluated)\n", r.Dir)
			continue
		}
		if err := evalRun(r.Dir, *perClient, out); err != nil {
			fmt.Fprintf(out, "%s: %v\n", r.Dir, err)
			failed++
			continue
		}
		done++
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d of the %d runs in %s could not be evaluated (above)", failed, len(runs), pos[0])
	case done == 0:
		return fmt.Errorf("no run in %s has a checkpoint yet", pos[0])
	}
	return nil
}

// evalRun evaluates the run in dir and prints its accuracy (and every client's).
func evalRun(dir string, perClient bool, out io.Writer) error {
	if cfg, err := rundir.LoadConfig(dir); err == nil { // else Evaluate names what is wrong
		if err := checkDevice(cfg.Device); err != nil {
			return err
		}
	}
	ev, rounds, err := experiment.Evaluate(dir)
	if err != nil {
		return err
	}
	// percent as everywhere; the fraction in full, to check against summary.json's
	fmt.Fprintf(out, "%s after %d rounds: accuracy %.2f%% (%v of the samples); per client %.2f ± %.2f\n",
		dir, rounds, 100*ev.Micro, ev.Micro, 100*ev.Mean, 100*ev.Std)
	if perClient {
		for c, a := range ev.Accuracy {
			fmt.Fprintf(out, "client %3d  %6.2f%%  (%d/%d)\n", c, 100*a, ev.Correct[c], ev.Count[c])
		}
	}
	return nil
}
