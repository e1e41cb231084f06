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
	"pfl/engine/config"
	"pfl/engine/dist"
	"pfl/engine/experiment"
	"pfl/engine/fl"
	"pfl/engine/rundir"
)

// trainCmd runs an experiment, or continues one.
func trainCmd(args []string, out io.Writer) error {
	fs := newFlags("train", out)
	path := fs.String("c", "", "experiment config (YAML); empty: the built-in demo ("+configs.Demo+")")
	var sets setFlags
	fs.Var(&sets, "set", "override a key, e.g. --set train.rounds=5 (repeatable; with --resume of a run only train.rounds, eval_every, checkpoint_every and tail_rounds, of a suite, seeds or sweep only train.rounds)")
	resume := fs.String("resume", "", "continue the run (or suite, seeds or sweep) in this run directory from its last checkpoint(s)")
	overwrite := fs.Bool("overwrite", false, "replace an existing run directory of the same name (default: refuse)")
	printCfg := fs.Bool("print-config", false, "print the config the run would use, each key with its source (default, file, environment, --set), and for a suite or grid each member's and sweep point's own values; then exit")
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
	if err := config.CheckKeysRead(cfg, sources.Given()); err != nil {
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
	return start(ctx, cfg, "", opts, out)
}

// start runs cfg (a grid, a suite or one run), or with dir continues the one in dir, in
// the group of processes the environment describes (joinGroup; a grid runs in one
// process, and is resumed without one), and prints its results.
func start(ctx context.Context, cfg config.Config, dir string, opts experiment.Options, out io.Writer) error {
	resume := dir != ""
	if !resume || !cfg.IsGrid() {
		var leave func()
		var err error
		if ctx, leave, err = joinGroup(ctx, cfg, out); err != nil {
			return err
		}
		defer leave()
	}
	switch {
	case cfg.IsGrid():
		run := func() (*experiment.GridResult, error) { return experiment.RunGrid(ctx, cfg, opts) }
		if resume {
			run = func() (*experiment.GridResult, error) { return experiment.ResumeGridAs(ctx, cfg, opts) }
		}
		gr, err := run()
		if err != nil {
			return err
		}
		printGrid(out, gr)
	case len(cfg.Suite) > 0:
		run := func() (*experiment.SuiteResult, error) { return experiment.RunSuiteWith(ctx, cfg, opts) }
		if resume {
			run = func() (*experiment.SuiteResult, error) { return experiment.ResumeSuiteAs(ctx, cfg, opts) }
		}
		sr, err := run()
		if err != nil {
			return err
		}
		printSuite(out, sr)
	default:
		run := experiment.RunWith
		if resume {
			run = experiment.ResumeWith
		}
		res, err := run(ctx, cfg, opts)
		if err != nil {
			return err
		}
		printResult(out, res)
	}
	return nil
}

// joinGroup joins the group of processes the environment describes (RANK, WORLD_SIZE,
// ... as torchrun or pfl launch set them) and returns ctx carrying it, which makes the run
// train across the processes, and a function that leaves the group. With WORLD_SIZE unset
// or 1 it returns ctx as it is. It says on out where Gloo's device sits: the first thing
// to check when the ranks of several machines cannot reach each other.
func joinGroup(ctx context.Context, cfg config.Config, out io.Writer) (context.Context, func(), error) {
	env, err := dist.FromEnv()
	if err != nil || env == nil {
		return ctx, func() {}, err
	}
	if cfg.IsGrid() {
		return nil, nil, fmt.Errorf("seeds and sweep run their runs one after another in one process; run one run's config under WORLD_SIZE=%d instead", env.World)
	}
	dev := cfg.Device
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

// resumeRun continues a run, a suite or a grid; --set may change the keys a resumed run
// may change (the run refuses any other difference, naming it).
func resumeRun(ctx context.Context, dir string, sets []string, opts experiment.Options, out io.Writer) error {
	if cfg, err := rundir.LoadConfig(dir); err == nil { // else the resume names what is wrong
		if err := checkDevice(cfg.Device); err != nil {
			return err
		}
	}
	if parent := rundir.Enclosing(dir); parent != "" {
		return fmt.Errorf("%s is one of the runs of %s; continue them together with: pfl train --resume %s (resuming one alone would leave the results of %s out of date)",
			dir, parent, parent, parent)
	}
	cfg, err := resumeConfig(dir, sets)
	if err != nil {
		return err
	}
	return start(ctx, cfg, dir, opts, out)
}

// resumeConfig is the config of the run, suite or grid in dir as --resume continues it,
// with sets, the keys a resume may change, applied: a run's with the PFL_* variables too, as
// pfl train applies them; a suite's or grid's (its config.json as written) with --set
// train.rounds alone, which gives every run of it that many rounds (the engine refuses
// fewer rounds than a run has done, naming it).
func resumeConfig(dir string, sets []string) (config.Config, error) {
	for _, c := range []struct {
		is   func(string) bool
		what string
	}{{rundir.IsGrid, "a grid (seeds or sweep)"}, {rundir.IsSuite, "a suite"}} {
		if !c.is(dir) {
			continue
		}
		if err := resumableSets(sets, c.what, suiteResumable); err != nil {
			return config.Config{}, err
		}
		cfg, err := rundir.LoadGridConfig(dir)
		if err != nil || len(sets) == 0 {
			return cfg, err
		}
		return withSets(cfg, sets, nil)
	}
	cfg, err := rundir.LoadConfig(dir)
	if err != nil || len(sets) == 0 {
		return cfg, err
	}
	if err := resumableSets(sets, "a run", rundir.ResumableKeys()); err != nil {
		return cfg, err
	}
	return withSets(cfg, sets, os.Environ())
}

// suiteResumable are the keys --resume of a suite or grid takes as --set: its runs'
// rounds. The cadence keys a single run's resume also takes would make a grid's seeds or a
// suite's members evaluate at other rounds than each other, which their tables compare.
var suiteResumable = []string{"train.rounds"}

// withSets is cfg, a resumed run's, suite's or grid's config, with env's PFL_* variables
// and sets applied, where it lies (its out and name) kept.
func withSets(cfg config.Config, sets, env []string) (config.Config, error) {
	out, name := cfg.Out, cfg.Name // where the run lies now, whatever config.json says
	cfg, _, err := config.Load(config.Sources{Base: &cfg, Env: env, Sets: sets})
	if err != nil {
		return cfg, err
	}
	cfg.Out, cfg.Name = out, name
	return cfg, nil
}

// resumableSets refuses a --set of a key that the resumed run, suite or grid (what) may not
// change (all but ok: the others define the runs, and name and out are where they lie),
// naming it before any checkpoint is read. A key that is no config key is left to
// config.Load, which says so.
func resumableSets(sets []string, what string, ok []string) error {
	for _, s := range sets {
		key, _, _ := strings.Cut(s, "=")
		key = strings.ToLower(key)
		if config.IsKey(key) && !slices.Contains(ok, key) {
			return fmt.Errorf("--set %s: %s cannot change when %s is resumed; --resume of %s takes --set of %s only (pfl train -c <config> --set ... starts another run)",
				s, key, what, what, strings.Join(ok, ", "))
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
