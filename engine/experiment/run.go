// Package experiment runs a whole federated experiment from its configuration
// (engine/config): one run, a suite of algorithms, or a grid of seeds and sweep points.
// It loads and partitions the data, builds the model, trains with the chosen algorithm,
// writes each run's directory (engine/rundir: config, partition, metrics, checkpoints,
// summary) and has engine/report draw the tables and figures.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"pfl/engine/config"
	"pfl/engine/dist"
	"pfl/engine/fl"
	"pfl/engine/rundir"
)

// Result is a finished experiment.
type Result struct {
	Dir     string
	History []fl.RoundMetrics
	Summary rundir.Summary
	Novel   []int // the clients held out of training (data.holdout)
}

// Observer receives a run's progress.
type Observer interface {
	// Round is called after every round: its metrics, and where the run (and the suite or
	// grid it belongs to) stands: the rounds done and in all, the training throughput so
	// far and the time left.
	Round(m fl.RoundMetrics, p Progress)
	// Log reports an event (a checkpoint, a resume).
	Log(msg string)
}

// Lines is an Observer writing one plain line per round (for logs and non-terminals), with
// the time the run, and the suite or grid it belongs to, have left (Progress.TimeLeft).
type Lines struct{ W io.Writer }

// Round writes the round's line.
func (l Lines) Round(m fl.RoundMetrics, p Progress) {
	acc := ""
	if m.Eval != nil {
		acc = fmt.Sprintf(" accuracy %.2f%% (clients %.2f ± %.2f)", 100*m.Eval.Micro, 100*m.Eval.Mean, 100*m.Eval.Std)
	}
	left := p.TimeLeft()
	if left != "" {
		left = "  " + left
	}
	fmt.Fprintf(l.W, "round %d/%d loss %.4f%s  %.0f samples/s%s\n", p.Done, p.Total, m.TrainLoss, acc, p.SamplesPerSec, left)
}

// Log writes msg on its own line.
func (l Lines) Log(msg string) { fmt.Fprintln(l.W, msg) }

type quiet struct{}

func (quiet) Round(fl.RoundMetrics, Progress) {}
func (quiet) Log(string)                      {}

// Options are a run's choices that do not define the experiment.
type Options struct {
	Observer Observer // progress; nil: none
	// Overwrite lets a fresh run replace an existing run directory of the same name; without
	// it such a run is refused and the old directory left as it was. It replaces only a
	// directory of pfl's own files (a run, suite or grid): one holding anything else is
	// refused, naming the file.
	Overwrite bool
	// StopOnDivergence ends the whole experiment with an error at the first run whose
	// training loss is not finite, as pfl did before divergence became a result. Without
	// it such a run ends as "diverged at round N" (its summary, the tables and figures say
	// so) and a suite, seeds or sweep go on with their other runs.
	StopOnDivergence bool
	// Place is where the run stands in a suite or grid, recorded in its summary.json;
	// RunSuite and RunGrid set it for their runs.
	Place config.Place
}

// observer is the options' observer, or one that reports nothing.
func (o Options) observer() Observer {
	if o.Observer == nil {
		return quiet{}
	}
	return o.Observer
}

// log is the options' observer's Log, or nil without an observer.
func (o Options) log() func(string) {
	if o.Observer == nil {
		return nil
	}
	return o.Observer.Log
}

// Run runs the experiment and writes its run directory under cfg.Out, reporting to obs
// (nil: nothing). An existing run directory of the same name is refused (RunWith with
// Overwrite replaces it). When ctx is cancelled (SIGINT, SIGTERM) the run saves a
// checkpoint after the round in progress and stops; Resume continues it.
func Run(ctx context.Context, cfg config.Config, obs Observer) (*Result, error) {
	return RunWith(ctx, cfg, Options{Observer: obs})
}

// RunWith is Run with options.
func RunWith(ctx context.Context, cfg config.Config, opts Options) (*Result, error) {
	cfg, err := single(cfg, filepath.Join(cfg.Out, cfg.Name))
	if err != nil {
		return nil, err
	}
	if err := dataThere(ctx, []config.Config{cfg}); err != nil {
		return nil, err
	}
	return run(ctx, cfg, false, opts)
}

// single is cfg resolved and validated as one run (dir names it in messages); a suite or
// grid is refused, naming what runs it.
func single(cfg config.Config, dir string) (config.Config, error) {
	cfg = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	if cfg.IsGrid() {
		return cfg, fmt.Errorf("seeds, sweep: %s has seeds or a sweep; it runs (and resumes) with RunGrid (ResumeGrid)", dir)
	}
	if len(cfg.Suite) > 0 {
		return cfg, fmt.Errorf("suite: %s is a suite; it runs (and resumes) with RunSuite (ResumeSuite)", dir)
	}
	return cfg, nil
}

// Resume continues the run in dir from its last checkpoint, with the config it was
// started with (its config.json). On the CPU the resumed run's metrics equal those of an
// uninterrupted run. A finished run is returned as its files hold it, nothing written; a
// run stopped before its first checkpoint starts afresh.
func Resume(ctx context.Context, dir string, obs Observer) (*Result, error) {
	cfg, err := rundir.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	return ResumeWith(ctx, cfg, Options{Observer: obs})
}

// ResumeWith continues the run at cfg.Out/cfg.Name with cfg, which may differ from the
// config the run was started with only in the keys that do not define the experiment
// (more rounds, the evaluation and checkpoint cadence, the summary's window); any other
// difference is refused, naming the keys. Of opts it takes the observer and
// StopOnDivergence (a resumed run never overwrites).
func ResumeWith(ctx context.Context, cfg config.Config, opts Options) (*Result, error) {
	dir := filepath.Join(cfg.Out, cfg.Name)
	cfg, err := single(cfg, dir)
	if err != nil {
		return nil, err
	}
	// before the data is prepared, which can take minutes; a checkpoint that cannot be read
	// is left to Restore, which says what is wrong with it
	if done, err := rundir.CheckpointRounds(dir); err == nil && done > cfg.Train.Rounds {
		return nil, shortened(runRounds{"the run", dir, cfg.Train.Rounds}, done)
	}
	return run(ctx, cfg, true, Options{Observer: opts.Observer, StopOnDivergence: opts.StopOnDivergence, Place: opts.Place})
}

// Interrupted is the error of a run stopped by a signal (a cancelled context) after a
// round, its checkpoint saved. A suite or grid names its own directory in Resume, so that
// resuming it continues every run and writes its results.
type Interrupted struct {
	Round  int    // the last round done
	Resume string // the directory to resume: the run's, or its suite's or grid's
}

// Error says after which round the run stopped and how to continue it.
func (e *Interrupted) Error() string {
	return fmt.Sprintf("interrupted after round %d; continue with: pfl train --resume %s", e.Round, e.Resume)
}

// resumeAt is err with an Interrupted error in it pointing at dir (a suite or grid) instead
// of the run; any other error as it is.
func resumeAt(err error, dir string) error {
	var ie *Interrupted
	if !errors.As(err, &ie) {
		return err
	}
	return &Interrupted{Round: ie.Round, Resume: dir}
}

// interrupted is returned when ctx ends while a run is being prepared.
func interrupted(ctx context.Context, stage string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while %s; nothing was written", stage)
	}
	return nil
}

// run trains the run cfg describes (resume: from its checkpoint) in its directory. Across
// processes only rank 0 writes the run directory (checkpoints, metrics, summary, plots,
// TensorBoard); every rank reads the checkpoint it resumes from.
func run(ctx context.Context, cfg config.Config, resume bool, opts Options) (*Result, error) {
	dir := filepath.Join(cfg.Out, cfg.Name)
	writes := dist.Writes(dist.FromContext(ctx))
	if writes {
		unlock, err := rundir.Lock(dir)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	if writes || resume {
		var err error
		if resume, err = openRunDir(dir, resume, opts); err != nil {
			return nil, err
		}
	}
	se, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer se.close()
	r := &runner{ctx: ctx, cfg: cfg, dir: dir, se: se, run: se.run, obs: opts.observer(), opts: opts, writes: writes}
	if res, err := r.begin(resume); res != nil || err != nil {
		return res, err
	}
	if !writes {
		return follow(ctx, dir, r.run, cfg.Train, r.obs)
	}
	return r.train(resume)
}

// follow is run for a rank other than 0 of a run across processes: the same rounds, in
// step with the other ranks through the run's collectives, and nothing written.
func follow(ctx context.Context, dir string, run *fl.Run, t config.Train, obs Observer) (*Result, error) {
	start := time.Now()
	samples, rounds, pace := 0, t.Rounds, newPace(t, start)
	for round := len(run.History); round < rounds; round++ {
		m, err := run.Round(round)
		if err != nil {
			return nil, err
		}
		samples += m.Samples
		obs.Round(m, pace.round(m, round+1, time.Now(), float64(samples)/time.Since(start).Seconds()))
		stop, err := dist.Any(dist.FromContext(ctx), ctx.Err() != nil && round+1 < rounds)
		if err != nil {
			return nil, err
		}
		if stop {
			return nil, fmt.Errorf("interrupted after round %d; rank 0 saved a checkpoint", round+1)
		}
	}
	return &Result{Dir: dir, History: run.History}, nil
}
