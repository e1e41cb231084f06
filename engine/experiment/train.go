package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pfl/engine/config"
	"pfl/engine/dist"
	"pfl/engine/fl"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// runner is a run being trained: its config, its directory, its prepared session and
// where it reports.
type runner struct {
	ctx    context.Context
	cfg    config.Config
	dir    string
	se     *session
	run    *fl.Run
	obs    Observer
	opts   Options
	writes bool      // this process writes the run directory (rank 0 of a run across processes)
	before float64   // the seconds the rounds restored took, in earlier processes
	start  time.Time // when this process's rounds began
}

// wall is the seconds the run's rounds took in all, every segment of a resumed run summed.
func (r *runner) wall() float64 { return r.before + time.Since(r.start).Seconds() }

// openRunDir checks that dir may be written by this run: a fresh run claims it
// (rundir.Claim: only what pfl wrote, an earlier run only with opts.Overwrite); a resumed
// one needs a checkpoint. A run stopped before its first checkpoint (a second signal
// during round 1) has its config.json but no checkpoint and no round: resuming it starts
// it afresh, which openRunDir reports by returning false for resume. A run without a
// checkpoint that records rounds (a finished run whose checkpoint was deleted) is refused:
// starting it afresh would replace its results.
func openRunDir(dir string, resume bool, opts Options) (bool, error) {
	if !resume {
		return false, rundir.Claim(dir, "run", opts.Overwrite, opts.log())
	}
	_, err := os.Stat(filepath.Join(dir, rundir.CheckpointFile))
	if err == nil {
		return true, nil
	}
	if _, cerr := os.Stat(filepath.Join(dir, "config.json")); cerr != nil || rundir.Owned(dir) != nil {
		return false, fmt.Errorf("%s has no checkpoint to resume from (%v)", dir, err)
	}
	if !rundir.FailedStart(dir) {
		return false, fmt.Errorf("%s has no %s to resume from, but records rounds done (%s): starting it afresh would replace them; restore the checkpoint, or start the run again with --overwrite",
			dir, rundir.CheckpointFile, roundsRecorded(dir))
	}
	opts.observer().Log(fmt.Sprintf("%s stopped before its first checkpoint: starting it afresh", dir))
	return false, nil
}

// roundsRecorded says which files of the run in dir record rounds done, for messages.
func roundsRecorded(dir string) string {
	var what []string
	if b, err := os.ReadFile(filepath.Join(dir, rundir.MetricsFile)); err == nil && len(b) > 0 {
		what = append(what, fmt.Sprintf("%d line(s) of metrics.jsonl", bytes.Count(b, []byte("\n"))))
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.SummaryFile)); err == nil {
		what = append(what, "summary.json")
	}
	if len(what) == 0 {
		return "files beyond those of its set-up"
	}
	return strings.Join(what, ", ")
}

// begin restores a resumed run from its checkpoint, or makes a fresh run's directory
// (config.json and the partition's description). A run that finished (or diverged) before
// is returned as its files hold it: resuming it has nothing to do and writes nothing.
func (r *runner) begin(resume bool) (*Result, error) {
	if !resume {
		if !r.writes {
			return nil, nil
		}
		// a signal during set-up stops it here: the run's directory is not created
		if err := interrupted(r.ctx, "setting up the run"); err != nil {
			return nil, err
		}
		if err := rundir.Start(r.dir, r.cfg); err != nil {
			return nil, err
		}
		return nil, r.se.manifest(r.dir)
	}
	var err error
	if r.before, err = rundir.Restore(r.dir, r.cfg, r.run); err != nil {
		return nil, err
	}
	if r.writes {
		if res, ok := r.finished(); ok {
			return r.finishedBefore(res)
		}
		// the resumable keys may have changed (more rounds): config.json follows
		if err := rundir.WriteConfig(r.dir, r.cfg); err != nil {
			return nil, err
		}
	}
	r.obs.Log(fmt.Sprintf("resumed %s after round %d", r.dir, len(r.run.History)))
	return nil, nil
}

// finished is the result of the run read back from its summary.json when the run has done
// all its rounds, or diverged after the rounds its checkpoint holds (a diverged run would
// diverge again at the same round). False when the summary is missing or is not this run's
// (a run killed between its last checkpoint and its summary finishes writing its files).
func (r *runner) finished() (*Result, bool) {
	s, ok := rundir.Finished(r.dir, r.cfg.Train.Rounds)
	if !ok || s.Rounds != len(r.run.History) {
		return nil, false
	}
	return &Result{Dir: r.dir, History: r.run.History, Novel: r.run.Novel(), Summary: *s}, true
}

// finishedBefore says that the resumed run had finished (or diverged) before and returns
// it, or refuses a diverged one with StopOnDivergence.
func (r *runner) finishedBefore(res *Result) (*Result, error) {
	if d := res.Summary.Diverged; d != 0 {
		if r.opts.StopOnDivergence {
			return nil, fmt.Errorf("%s diverged at round %d before (its training loss was not finite); start it afresh with --overwrite", r.dir, d)
		}
		r.obs.Log(fmt.Sprintf("%s diverged at round %d before; nothing to do (it would diverge again: start it afresh with --overwrite and other settings)", r.dir, d))
		return res, nil
	}
	r.obs.Log(fmt.Sprintf("%s finished its %d rounds before; nothing to do (raise train.rounds with --set to train more)", r.dir, r.cfg.Train.Rounds))
	return res, nil
}

// train runs the run's remaining rounds, writing each round's metrics and a checkpoint
// every train.checkpoint_every rounds, then its results.
func (r *runner) train(resumed bool) (*Result, error) {
	log, err := rundir.OpenLog(r.dir, r.run.History, r.run.Novel())
	if err != nil {
		return nil, err
	}
	defer log.Close()
	dev := r.cfg.Device
	if err := rundir.RecordMachine(r.dir, dev, resumed, r.run.Workers()); err != nil {
		return nil, err
	}
	r.obs.Log(memoryEstimate(r.se.floor, dev))
	if r.se.warning != "" {
		r.obs.Log(r.se.warning)
	}
	if !dev.IsCUDA() {
		r.obs.Log(fmt.Sprintf("cpu: %d client group(s) trained at once, one per thread (train.workers)", r.run.Workers()))
		if r.se.expected != "" {
			r.obs.Log(r.se.expected)
		}
	}
	r.start = time.Now()
	samples, rounds, pace := 0, r.cfg.Train.Rounds, newPace(r.cfg.Train, r.start)
	for round := len(r.run.History); round < rounds; round++ {
		m, err := r.run.Round(round)
		if err != nil {
			return r.roundFailed(err)
		}
		samples += m.Samples
		if err := log.Round(m); err != nil {
			return nil, err
		}
		r.obs.Round(m, pace.round(m, round+1, time.Now(), float64(samples)/time.Since(r.start).Seconds()))
		last := round+1 == rounds
		// a signal during the last round still gets the summary; across processes the
		// ranks stop after the same round
		stop, err := dist.Any(dist.FromContext(r.ctx), r.ctx.Err() != nil && !last)
		if err != nil {
			return nil, err
		}
		if (round+1)%r.cfg.Train.CheckpointEvery == 0 || last || stop {
			if err := rundir.SaveCheckpoint(r.dir, r.cfg, r.run, r.wall()); err != nil {
				return nil, err
			}
			r.obs.Log(fmt.Sprintf("checkpoint round %d", round+1))
		}
		if stop {
			return nil, &Interrupted{Round: round + 1, Resume: r.dir}
		}
	}
	r.obs.Log(memoryPeak(dev))
	return r.finish()
}

// roundFailed ends a run whose round failed: alone, with its last good state saved (the
// failed round changed neither the global model nor the store) and, when its training
// loss was not finite, as a diverged run with its results; across processes, where a
// round can fail half-way through its all-reduces with the global model holding a partial
// sum, with the last checkpoint kept.
func (r *runner) roundFailed(err error) (*Result, error) {
	if dist.FromContext(r.ctx) != nil {
		if !rundir.HasCheckpoint(r.dir) {
			return nil, fmt.Errorf("%w; no checkpoint was written yet: start the run again with --overwrite", err)
		}
		return nil, fmt.Errorf("%w; the last checkpoint in %s is kept", err, r.dir)
	}
	if cerr := rundir.SaveCheckpoint(r.dir, r.cfg, r.run, r.wall()); cerr != nil {
		return nil, fmt.Errorf("%w (and saving the last good checkpoint failed: %v)", err, cerr)
	}
	var div *fl.DivergedError
	if !errors.As(err, &div) {
		return nil, fmt.Errorf("%w; the last good state (after round %d) is saved in %s", err, len(r.run.History), r.dir)
	}
	// its results are those of the rounds before; its checkpoint holds the last good
	// state, and resuming it returns these results
	s := r.summary(r.wall())
	s.Diverged = div.Round
	res, derr := r.results(s)
	if derr != nil {
		return nil, fmt.Errorf("%w (and writing its results failed: %v)", err, derr)
	}
	if r.opts.StopOnDivergence {
		return nil, fmt.Errorf("%w; the last good state (after round %d) is saved in %s", err, len(r.run.History), r.dir)
	}
	r.obs.Log(fmt.Sprintf("%s diverged at round %d (%v): the run ends here, its results say so", r.dir, div.Round, err))
	return res, nil
}

// finish writes a finished run's results: the novel-client study, the summary and
// figures, and the client embeddings with their t-SNE.
func (r *runner) finish() (*Result, error) {
	s := r.summary(r.wall())
	var err error
	if s.Novel, err = studyNovel(r.dir, r.cfg, r.run); err != nil {
		return nil, err
	}
	res, err := r.results(s)
	if err != nil {
		return nil, err
	}
	if err := rundir.WriteEmbeddings(r.dir, r.run); err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, rundir.EmbeddingsFile)); err == nil && r.run.Clients() > 1 {
		if err := report.EmbeddingTSNE(r.dir); err != nil {
			return nil, fmt.Errorf("embeddings: %w", err)
		}
	}
	return res, nil
}

// summary is the run's summary after the rounds it has done, with wall, the seconds they
// took in all.
func (r *runner) summary(wall float64) rundir.Summary {
	s := rundir.Summarize(r.cfg.Name, r.run.History, r.cfg.Train.TailRounds, r.run.Novel())
	s.Named(r.cfg, r.opts.Place)
	s.EvalProtocol, s.Resources = r.cfg.Train.EvalProtocol, r.run.Resources()
	s.WallSeconds, s.SamplesPerSec = throughput(r.run.History, wall)
	return s
}

// results writes the run's summary and figures and returns it.
func (r *runner) results(s rundir.Summary) (*Result, error) {
	if err := rundir.WriteSummary(r.dir, s); err != nil {
		return nil, err
	}
	title := report.RunTitle(r.cfg, r.opts.Place.Member, r.opts.Place.Sweep)
	if err := report.RunFigures(r.dir, title, r.run.History, r.run.Novel()); err != nil {
		return nil, err
	}
	return &Result{Dir: r.dir, History: r.run.History, Novel: r.run.Novel(), Summary: s}, nil
}

// throughput is the run's wall time, every segment of a resumed run summed, and its
// training samples per second over all its rounds (0 for no time).
func throughput(h []fl.RoundMetrics, wall float64) (float64, float64) {
	samples := 0
	for _, m := range h {
		samples += m.Samples
	}
	if wall <= 0 {
		return 0, 0
	}
	return wall, float64(samples) / wall
}
