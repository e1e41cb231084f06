package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"pfl/bench/harness"
	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/experiment"
)

// printConfig writes the config a run would use, one key per line in the layout of a
// config file's keys (section.key: value), each with where its value came from: the file,
// an environment variable, a --set, or the default. A value the sources leave unset that
// the run derives (a model size from model.preset, a name from the file) is marked
// "default, resolved". Optional keys left unset print null. A key that a suite member or
// the sweep sets says so, and below the config each suite member and sweep point has a
// section of its own (printRuns): the keys it sets and their resolved values.
func printConfig(out io.Writer, cfg config.Config, sources config.Origins) error {
	resolved := cfg.Resolved()
	notes := memberNotes(cfg)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, key := range config.Keys() {
		given, err := cfg.ValueJSON(key)
		if err != nil {
			return err
		}
		final, err := resolved.ValueJSON(key)
		if err != nil {
			return err
		}
		source, ok := sources[key]
		switch {
		case !ok && given != final:
			source = "default, resolved"
		case !ok:
			source = "default"
		}
		if note, ok := notes[key]; ok {
			source += "; " + note
		}
		fmt.Fprintf(tw, "%s: %s\t# %s\n", key, shown(final), shown(source))
	}
	if len(cfg.Sweep) > 0 {
		b, err := json.Marshal(cfg.Sweep)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "sweep: %s\t# %s\n", shown(string(b)), sources["sweep"])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printRuns(out, cfg)
}

// maxShown is the most bytes of a value or source --print-config shows: the columns align
// to the longest, so one long value (a note of a megabyte) would pad every line to it.
const maxShown = 160

// shown is s, or its first maxShown bytes (whole characters) marked as cut, with its size.
func shown(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", s[:cut], len(s))
}

// dryRun checks cfg as `pfl train` would and measures what it would cost, writing
// nothing: every run the config makes (each suite member, each sweep point; the seeds of a
// grid cost the same) is prepared as it would start (data loaded, partitioned and
// uploaded, models built, memory checked), trains its first round and evaluates once, and
// the table projects its wall time from those two times (the first round includes
// warm-up, so the projection errs long). No data is downloaded: a missing dataset is an
// error naming `pfl data get`.
func dryRun(ctx context.Context, out io.Writer, cfg config.Config) error {
	runs, err := experiment.Plan(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dry run: %d run(s) to prepare; nothing is written\n", len(runs))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\talgorithm\tmodel\tclients\trounds\tseeds\tfirst round\teval\tprojected\t")
	var total float64
	for i, p := range runs {
		c := p.Config
		c.Data.Download = false // a dry run touches nothing, the data folder included
		name := c.Name
		fmt.Fprintf(out, "[%d/%d] %s: preparing\n", i+1, len(runs), name)
		round, eval, mem, err := measureFirstRound(ctx, c)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, line := range mem {
			fmt.Fprintf(out, "  %s\n", line)
		}
		t := c.Train
		projected := harness.Project(t.Rounds, t.EvalEvery, round.Seconds(), eval.Seconds()) * float64(p.Seeds)
		total += projected
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t\n", name, c.Algorithm.Name, c.Model.Preset, c.Data.Clients,
			t.Rounds, p.Seeds, round.Round(time.Millisecond), eval.Round(time.Millisecond), (time.Duration(projected) * time.Second).Round(time.Second))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "projected wall time of the whole experiment: %s (from each run's first round and one evaluation on this machine)\n",
		(time.Duration(total) * time.Second).Round(time.Second))
	return nil
}

// measureFirstRound prepares cfg's run without a run directory, trains its first round and
// evaluates once, and returns the two wall times and the memory lines `pfl train` prints.
func measureFirstRound(ctx context.Context, cfg config.Config) (round, eval time.Duration, memory []string, err error) {
	sess, err := experiment.Open(ctx, cfg)
	if err != nil {
		return 0, 0, nil, err
	}
	defer sess.Close()
	memory = append(sess.Memory(), sess.Warnings()...)
	r, dev := sess.Run(), cfg.Device
	start := time.Now()
	if _, err := r.Round(0); err != nil {
		return 0, 0, nil, fmt.Errorf("round 1: %w", err)
	}
	if err := cuda.Synchronize(dev); err != nil { // a GPU's round ends when its queue does
		return 0, 0, nil, err
	}
	round = time.Since(start)
	if err := ctx.Err(); err != nil {
		return 0, 0, nil, err
	}
	start = time.Now()
	if _, err := r.Evaluate(); err != nil {
		return 0, 0, nil, fmt.Errorf("evaluation: %w", err)
	}
	if err := cuda.Synchronize(dev); err != nil {
		return 0, 0, nil, err
	}
	return round, time.Since(start), memory, nil
}
