package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"pfl/configs"
	"pfl/cuda"
	"pfl/engine/dist"
	"pfl/engine/experiment"
	"pfl/engine/fl"
)

// trainCmd runs an experiment, or continues one.
func trainCmd(args []string, out io.Writer) error {
	fs := newFlags("train", out)
	path := fs.String("c", "", "experiment config (YAML); empty: the built-in demo ("+configs.Demo+")")
	var sets setFlags
	fs.Var(&sets, "set", "override a key, e.g. --set train.rounds=5 (repeatable; with --resume only train.rounds, eval_every, checkpoint_every and tail_rounds)")
	resume := fs.String("resume", "", "continue the run (or suite) in this run directory from its last checkpoint")
	overwrite := fs.Bool("overwrite", false, "replace an existing run directory of the same name (default: refuse)")
	printCfg := fs.Bool("print-config", false, "print the config the run would use, each key with its source (default, file, environment, --set), and exit")
	stopDiv := fs.Bool("stop-on-divergence", false, "end the whole suite, seeds or sweep at the first run whose training loss is not finite (default: that run ends as diverged and the others go on)")
	dry := fs.Bool("dry-run", false, "check the config, prepare every run (data, models, memory), time its first round and one evaluation and project the wall time; write nothing")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: pfl train [-c config.yaml|name] [--set key=value]... [--overwrite] [--stop-on-divergence] [--print-config] [--dry-run] | --resume <run dir> [--set key=value]... [--stop-on-divergence]")
		fs.PrintDefaults()
		fmt.Fprintln(fs.Output(), "\nalgorithm.name (and suite) take: "+fl.AlgorithmNames()+" (pfl algorithms describes them)")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	// an empty value (an unset shell variable) must not fall back to the demo
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range []struct{ name, flag, what string }{{"resume", "--resume", "the run directory to continue"}, {"c", "-c", "a config file or a built-in config's name"}} {
		if given[f.name] && fs.Lookup(f.name).Value.String() == "" {
			return fmt.Errorf("%s: empty; give %s (an unset shell variable?), or leave %s out", f.flag, f.what, f.flag)
		}
	}
	if *resume != "" {
		if *path != "" || *overwrite || *printCfg || *dry {
			return fmt.Errorf("--resume continues a run with its own config; drop -c, --overwrite, --print-config and --dry-run")
		}
		ctx, stop := interruptible(out)
		defer stop()
		return resumeRun(ctx, *resume, sets, experiment.Options{Observer: observer(out), StopOnDivergence: *stopDiv}, out)
	}
	cfg, sources, err := loadConfigSources(*path, sets)
	if err != nil {
		return err
	}
	if *printCfg {
		if *dry {
			return fmt.Errorf("--print-config and --dry-run: give one")
		}
		// no signal handler: printing writes nothing, so a signal ends it at once
		return printConfig(out, cfg, sources)
	}
	if err := experiment.CheckKeysRead(cfg, givenKeys(sources)); err != nil {
		return err
	}
	ctx, stop := interruptible(out)
	defer stop()
	if err := checkDevice(cfg.Device); err != nil {
		return err
	}
	if *dry {
		return dryRun(ctx, out, cfg)
	}
	opts := experiment.Options{Observer: observer(out), Overwrite: *overwrite, StopOnDivergence: *stopDiv}
	ctx, leave, err := joinGroup(ctx, cfg, out)
	if err != nil {
		return err
	}
	defer leave()
	if cfg.IsGrid() {
		gr, err := experiment.RunGrid(ctx, cfg, opts)
		if err != nil {
			return err
		}
		printGrid(out, gr)
		return nil
	}
	if len(cfg.Suite) > 0 {
		sr, err := experiment.RunSuiteWith(ctx, cfg, opts)
		if err != nil {
			return err
		}
		printSuite(out, sr)
		return nil
	}
	res, err := experiment.RunWith(ctx, cfg, opts)
	if err != nil {
		return err
	}
	printResult(out, res)
	return nil
}

// joinGroup joins the group of processes the environment describes (RANK, WORLD_SIZE,
// ... as torchrun or pfl launch set them) and returns ctx carrying it, which makes the run
// train across the processes, and a function that leaves the group. With WORLD_SIZE unset
// or 1 it returns ctx as it is. It says on out where Gloo's device sits: the first thing
// to check when the ranks of several machines cannot reach each other.
func joinGroup(ctx context.Context, cfg experiment.Config, out io.Writer) (context.Context, func(), error) {
	env, err := dist.FromEnv()
	if err != nil || env == nil {
		return ctx, func() {}, err
	}
	if cfg.IsGrid() {
		return nil, nil, fmt.Errorf("seeds and sweep run their runs one after another in one process; run one run's config under WORLD_SIZE=%d instead", env.World)
	}
	dev, err := cuda.ParseDevice(cfg.Device)
	if err != nil {
		return nil, nil, fmt.Errorf("device: %w", err)
	}
	if dev.IsCUDA() {
		// each rank on CUDA takes GPU LOCAL_RANK: a rank beyond the GPUs has none
		if n, err := cuda.CUDADeviceCount(); err == nil && n > 0 && env.LocalRank >= n {
			return nil, nil, fmt.Errorf("LOCAL_RANK %d: %d GPU(s) visible, one per rank on CUDA; start at most %d ranks (pfl launch -n %d)", env.LocalRank, n, n, n)
		}
	}
	dev = env.Device(dev)
	var n dist.GlooNetwork
	if !dev.IsCUDA() {
		if n, err = env.Gloo(); err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(out, "rank %d of %d: Gloo on %v\n", env.Rank, env.World, n)
	}
	g, err := env.Join(dev, n)
	if err != nil {
		return nil, nil, err
	}
	return dist.NewContext(ctx, g), func() { g.Close() }, nil
}

// resumeRun continues a run or a suite; --set may change the keys a resumed run may change
// (the run refuses any other difference, naming it).
func resumeRun(ctx context.Context, dir string, sets []string, opts experiment.Options, out io.Writer) error {
	if cfg, err := experiment.LoadRunConfig(dir); err == nil { // else the resume names what is wrong
		if err := checkDevice(cfg.Device); err != nil {
			return err
		}
	}
	if parent := experiment.Enclosing(dir); parent != "" {
		return fmt.Errorf("%s is one of the runs of %s; continue them together with: pfl train --resume %s (resuming one alone would leave the results of %s out of date)",
			dir, parent, parent, parent)
	}
	if experiment.IsGrid(dir) {
		if len(sets) > 0 {
			return fmt.Errorf("--set with --resume of a grid (seeds or sweep): edit %s instead", filepath.Join(dir, "config.json"))
		}
		gr, err := experiment.ResumeGrid(ctx, dir, opts)
		if err != nil {
			return err
		}
		printGrid(out, gr)
		return nil
	}
	if experiment.IsSuite(dir) {
		if len(sets) > 0 {
			return fmt.Errorf("--set with --resume of a suite: edit %s instead", filepath.Join(dir, "config.json"))
		}
		cfg, err := experiment.LoadRunConfig(dir)
		if err != nil {
			return err
		}
		ctx, leave, err := joinGroup(ctx, cfg, out)
		if err != nil {
			return err
		}
		defer leave()
		sr, err := experiment.ResumeSuite(ctx, dir, opts)
		if err != nil {
			return err
		}
		printSuite(out, sr)
		return nil
	}
	cfg, err := experiment.LoadRunConfig(dir)
	if err != nil {
		return err
	}
	if err := resumableSets(sets); err != nil {
		return err
	}
	if len(sets) > 0 {
		out, name := cfg.Out, cfg.Name // where the run lies now, whatever config.json says
		if cfg, err = loadConfig(filepath.Join(dir, "config.json"), sets); err != nil {
			return err
		}
		cfg.Out, cfg.Name = out, name
	}
	ctx, leave, err := joinGroup(ctx, cfg, out)
	if err != nil {
		return err
	}
	defer leave()
	res, err := experiment.ResumeWith(ctx, cfg, opts)
	if err != nil {
		return err
	}
	printResult(out, res)
	return nil
}

// givenKeys are the keys of sources (loadConfigSources') that --set or a PFL_* variable
// gave, each with who gave it; a config file's keys are not among them.
func givenKeys(sources map[string]string) map[string]string {
	out := map[string]string{}
	for key, src := range sources {
		if strings.HasPrefix(src, "--set ") || strings.HasPrefix(src, "environment variable ") {
			out[key] = src
		}
	}
	return out
}

// resumableSets refuses a --set of a key that a resumed run may not change (all but
// experiment.ResumableKeys: the others define the run, and name and out are where it
// lies), naming it before the checkpoint is read. A key that is no config key is left to
// loadConfig, which says so.
func resumableSets(sets []string) error {
	fields, ok := configFields(), experiment.ResumableKeys()
	for _, s := range sets {
		key, _, _ := strings.Cut(s, "=")
		key = strings.ToLower(key)
		if _, known := fields[key]; known && !slices.Contains(ok, key) {
			return fmt.Errorf("--set %s: %s cannot change when a run is resumed (it is the run's own; pfl train -c <config> --set ... starts another run); --resume takes --set of %s only",
				s, key, strings.Join(ok, ", "))
		}
	}
	return nil
}

// stoppingNotice follows the signal's name on the line a process prints when a signal asks
// it to stop ("pfl: terminated: stopping after the round in progress ..."): pfl launch
// reads it to name the rank that a signal stopped.
const stoppingNotice = ": stopping after the round in progress"

// interruptible returns a context that the first SIGINT or SIGTERM cancels (the run
// finishes its round, saves a checkpoint and stops; during set-up it stops at the next
// stage) and a second one ends the process at once (the last checkpoint, written
// atomically, stays valid).
func interruptible(out io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(out, "\npfl: %v%s (with a checkpoint), or before the first if the run is still setting up; send it again to stop at once\n", s, stoppingNotice)
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			fmt.Fprintf(out, "\npfl: %v again: stopping now; the last checkpoint is kept\n", s)
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

func printSuite(out io.Writer, sr *experiment.SuiteResult) {
	if sr.Table == "" { // a rank other than 0 of a suite across processes
		fmt.Fprintf(out, "\n%d members done; rank 0 writes %s\n", len(sr.Runs), sr.Dir)
		return
	}
	fmt.Fprintf(out, "\n%s\nresults: %s\nplot: %s\n", sr.Table,
		filepath.Join(sr.Dir, "results.md"), filepath.Join(sr.Dir, "accuracy.png"))
}

func printGrid(out io.Writer, gr *experiment.GridResult) {
	fmt.Fprintf(out, "\n%s\nresults: %s\n", gr.Table, filepath.Join(gr.Dir, "results.md"))
}

func printResult(out io.Writer, res *experiment.Result) {
	if res.Summary.Name == "" { // a rank other than 0 of a run across processes
		fmt.Fprintf(out, "\n%d rounds done; rank 0 writes %s\n", len(res.History), res.Dir)
		return
	}
	s := res.Summary
	if s.Diverged != 0 {
		fmt.Fprintf(out, "\n%s: diverged at round %d (its training loss was not finite) after %.1f s; its results are of the %d rounds before\n",
			s.Name, s.Diverged, s.WallSeconds, s.Rounds)
		fmt.Fprintf(out, "run directory: %s\n", res.Dir)
		return
	}
	fmt.Fprintf(out, "\n%s: %d rounds in %.1f s (%.0f samples/s)\n", s.Name, s.Rounds, s.WallSeconds, s.SamplesPerSec)
	fmt.Fprintf(out, "final accuracy %.2f%%; per client %.2f ± %.2f (p10 %.2f, median %.2f, p90 %.2f, worst 10%% %.2f)\n",
		100*s.FinalMicro, 100*s.FinalMean, 100*s.FinalStd, 100*s.P10, 100*s.P50, 100*s.P90, 100*s.Worst10)
	if s.TailEvals < 2 { // the spread of one evaluation is unknown, not 0
		fmt.Fprintf(out, "accuracy over the last evaluation %.2f%% (one evaluation in the window: no spread)\n", 100*s.TailMean)
	} else {
		fmt.Fprintf(out, "accuracy over the last %d evaluations %.2f ± %.2f %%\n", s.TailEvals, 100*s.TailMean, 100*s.TailStd)
	}
	if s.Falling != "" {
		fmt.Fprintf(out, "falling: %s\n", s.Falling)
	}
	fmt.Fprintf(out, "run directory: %s\n", res.Dir)
}
