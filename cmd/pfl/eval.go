package main

import (
	"fmt"
	"io"

	"pfl/engine/experiment"
)

// evalCmd evaluates every client's personalized model from a run's last checkpoint.
func evalCmd(args []string, out io.Writer) error {
	fs := newFlags("eval", out)
	perClient := fs.Bool("clients", false, "print every client's accuracy")
	pos, err := parseArgs(fs, args, 1, 1, "pfl eval [-clients] <run dir>")
	if err != nil {
		return err
	}
	ev, rounds, err := experiment.Evaluate(pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s after %d rounds: accuracy %.4f; per client %.4f ± %.4f\n", pos[0], rounds, ev.Micro, ev.Mean, ev.Std)
	if *perClient {
		for c, a := range ev.Accuracy {
			fmt.Fprintf(out, "client %3d  %.4f  (%d/%d)\n", c, a, ev.Correct[c], ev.Count[c])
		}
	}
	return nil
}
