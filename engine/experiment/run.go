package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/data/fetch"
	"pfl/engine/dist"
	"pfl/engine/fl"
	"pfl/engine/internal/jsonfloat"
	"pfl/engine/model"
)

// Summary holds the numbers of both papers' evaluation protocols.
type Summary struct {
	Name string `json:"name"`
	// Algorithm (algorithm.name), Seed, Member (the suite member's label; "" for a run of
	// its own) and Sweep (the sweep point's values; none without a sweep) say which run of
	// an experiment this is. A summary.json written before pfl recorded them lacks them
	// (read as "", 0 and none); the run's config.json and its place in its suite or grid
	// say the same.
	Algorithm string       `json:"algorithm,omitempty"`
	Seed      uint64       `json:"seed"`
	Member    string       `json:"member,omitempty"`
	Sweep     []SweepValue `json:"sweep,omitempty"`
	Rounds    int          `json:"rounds"`
	// FedPerfix's protocol: the last evaluation's per-client accuracies.
	FinalMicro float64 `json:"final_micro"` // Σ correct / Σ samples
	FinalMean  float64 `json:"final_mean"`
	FinalStd   float64 `json:"final_std"`
	P10        float64 `json:"p10"`
	P50        float64 `json:"p50"`
	P90        float64 `json:"p90"`
	Worst10    float64 `json:"worst10"` // mean accuracy of the worst 10% of clients
	// FedTP's protocol: micro accuracy averaged over the evaluations of the last
	// train.tail_rounds rounds (200 in the paper; every evaluation when the run is shorter).
	TailMean  float64 `json:"tail_mean"`
	TailStd   float64 `json:"tail_std"`
	TailEvals int     `json:"tail_evals"`
	// TailTrend is the rise of the least-squares line through those evaluations (micro
	// accuracy against round) across the rounds they span: near 0 (within a few TailStd) a
	// curve that has flattened, clearly positive one still rising when the run stopped. 0
	// with fewer than two evaluations in the window.
	TailTrend float64 `json:"tail_trend"`
	// Best is the highest micro accuracy of any evaluation of the run, after BestRound
	// (from 1): with the last evaluation it tells a curve that collapsed from one that
	// never rose.
	Best      float64 `json:"best_micro"`
	BestRound int     `json:"best_round"`
	// Falling says why the run's curve counts as falling (empty when it does not): its
	// last evaluation 10 or more points under its best, or its tail trend below −2 × the
	// tail's spread and below −1 point (see falling). Tables, the report and the reading
	// under a suite's table flag such a run.
	Falling string `json:"falling,omitempty"`

	// ClientUpdates is the number of local trainings the run did: the clients trained, summed
	// over its rounds (Local on its all-clients schedule trains every client every round).
	ClientUpdates int `json:"client_updates"`

	// SamplesPerSec and WallSeconds are over all the run's rounds: a resumed run's
	// segments are summed (each checkpoint records the time of the rounds it holds).
	SamplesPerSec float64 `json:"samples_per_sec"`
	WallSeconds   float64 `json:"wall_seconds"`

	// Diverged is the round (from 1) whose training loss was not finite, which ended the
	// run after the rounds of Rounds; 0 for a run that did not diverge.
	Diverged int `json:"diverged_at_round,omitempty"`

	// Novel is the novel-client study (data.holdout > 0), one entry per tuned part.
	Novel []NovelSummary `json:"novel,omitempty"`

	// EvalProtocol is train.eval_protocol: when the evaluations saw each client's model.
	EvalProtocol string `json:"eval_protocol"`
	// Resources is one client's storage, computation and communication.
	Resources fl.Resources `json:"resources"`
}

// Result is a finished experiment.
type Result struct {
	Dir     string
	History []fl.RoundMetrics
	Summary Summary
	Novel   []int // the clients held out of training (data.holdout)
}

// Observer receives a run's progress.
type Observer interface {
	// Round is called after every round: its metrics, the rounds done and in all, and the
	// training throughput so far.
	Round(m fl.RoundMetrics, done, total int, samplesPerSec float64)
	// Log reports an event (a checkpoint, a resume).
	Log(msg string)
}

// Lines is an Observer writing one plain line per round (for logs and non-terminals).
type Lines struct{ W io.Writer }

// Round writes the round's line.
func (l Lines) Round(m fl.RoundMetrics, done, total int, sps float64) {
	acc := ""
	if m.Eval != nil {
		acc = fmt.Sprintf(" accuracy %.2f%% (clients %.2f ± %.2f)", 100*m.Eval.Micro, 100*m.Eval.Mean, 100*m.Eval.Std)
	}
	fmt.Fprintf(l.W, "round %d/%d loss %.4f%s  %.0f samples/s\n", done, total, m.TrainLoss, acc, sps)
}

// Log writes msg on its own line.
func (l Lines) Log(msg string) { fmt.Fprintln(l.W, msg) }

type quiet struct{}

func (quiet) Round(fl.RoundMetrics, int, int, float64) {}
func (quiet) Log(string)                               {}

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
	Place Place
}

// Place is a run's place in a suite or grid: its suite member's label ("" outside a
// suite) and its sweep point's values (none without a sweep).
type Place struct {
	Member string
	Sweep  []SweepValue
}

// SweepValue is one key of a sweep point and its value as the sweep lists it.
type SweepValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// named records in s which run of its experiment it summarizes: cfg's algorithm and seed
// and the place.
func (s *Summary) named(cfg Config, p Place) {
	s.Algorithm, s.Seed, s.Member, s.Sweep = cfg.Algorithm.Name, cfg.Seed, p.Member, p.Sweep
}

// Run runs the experiment and writes its run directory under cfg.Out, reporting to obs
// (nil: nothing). An existing run directory of the same name is refused (RunWith with
// Overwrite replaces it). When ctx is cancelled (SIGINT, SIGTERM) the run saves a
// checkpoint after the round in progress and stops; Resume continues it.
func Run(ctx context.Context, cfg Config, obs Observer) (*Result, error) {
	return RunWith(ctx, cfg, Options{Observer: obs})
}

// RunWith is Run with options.
func RunWith(ctx context.Context, cfg Config, opts Options) (*Result, error) {
	cfg = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.IsGrid() {
		return nil, fmt.Errorf("seeds, sweep: a config with seeds or a sweep runs with RunGrid")
	}
	if len(cfg.Suite) > 0 {
		return nil, fmt.Errorf("suite: a config with a suite runs with RunSuite")
	}
	if err := dataThere(ctx, []Config{cfg}); err != nil {
		return nil, err
	}
	return run(ctx, cfg, false, opts)
}

// Resume continues the run in dir from its last checkpoint, with the config it was
// started with (its config.json). On the CPU the resumed run's metrics equal those of an
// uninterrupted run. A finished run is returned as its files hold it, nothing written; a
// run stopped before its first checkpoint starts afresh.
func Resume(ctx context.Context, dir string, obs Observer) (*Result, error) {
	cfg, err := LoadRunConfig(dir)
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
func ResumeWith(ctx context.Context, cfg Config, opts Options) (*Result, error) {
	cfg = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.IsGrid() {
		return nil, fmt.Errorf("%s has seeds or a sweep; resume it with ResumeGrid", filepath.Join(cfg.Out, cfg.Name))
	}
	if len(cfg.Suite) > 0 {
		return nil, fmt.Errorf("%s is a suite; resume it with ResumeSuite", filepath.Join(cfg.Out, cfg.Name))
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

// session is a prepared run: data on the device and the federated run. Preparing writes
// nothing: a run that fails to prepare leaves no trace.
type session struct {
	run         *fl.Run
	train, test data.Samples
	manifest    func(dir string) error // writes the partition's description
	floor       float64                // memoryFloor's bytes
	expected    string                 // memoryExpected's line (CPU), printed before the first round
	warning     string                 // steplessClients' line, printed before the first round
}

func (se *session) close() {
	se.run.Close()
	se.closeData()
}

// closeData frees the uploaded data (test may be train itself).
func (se *session) closeData() {
	se.train.Close()
	if se.test != se.train {
		se.test.Close()
	}
}

// interrupted is returned when ctx ends while a run is being prepared.
func interrupted(ctx context.Context, stage string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while %s; nothing was written", stage)
	}
	return nil
}

// prepare loads and partitions the data, uploads it and builds the run, checking ctx
// between the stages; it writes nothing.
func prepare(ctx context.Context, cfg Config) (*session, error) {
	if err := useThreads(); err != nil { // before the first tensor op: the data's too
		return nil, err
	}
	dev, _ := cuda.ParseDevice(cfg.Device)
	if g := dist.FromContext(ctx); g != nil && dev.IsCUDA() {
		dev = g.Device() // each rank its own GPU
	}
	// the dataset where data.dataset says, else in pfl's data folder (fetched there first
	// with data.download); config.json keeps the spec as written
	spec, err := fetch.Resolve(ctx, cfg.Data.Dataset, cfg.Data.Download, fetch.Options{Progress: os.Stderr})
	if err != nil {
		return nil, fmt.Errorf("data.dataset: %w", err)
	}
	cfg.Data.Dataset = spec
	if data.IsText(cfg.Data.Dataset) {
		return prepareText(ctx, cfg, dev)
	}
	im, err := loadImages(cfg)
	if err != nil {
		return nil, err
	}
	sp := im.sp
	if err := interrupted(ctx, "loading the data"); err != nil {
		return nil, err
	}
	fed, err := sp.Partition(cfg.partitionConfig())
	if err != nil {
		key := "data.partition"
		if cfg.Data.Partition == string(data.MethodFile) {
			key = "data.partition_file" // the file's lists are what was refused
		}
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	se := &session{manifest: fed.WriteManifest}
	up := data.UploadConfig{Size: cfg.Data.ImageSize, Channels: cfg.Data.Channels}
	if up.Mean, up.Std, err = normalization(cfg.Data, sp.Train.C); err != nil {
		return nil, err
	}
	if up.Mean == nil {
		up.Mean, up.Std = data.ChannelStats(sp.Train)
	}
	ch, h, w := up.Shape(sp.Train)
	// the run's one strategy: it shapes the model, is measured, then trains; until the run
	// takes it over it holds no state (nothing is bound before fl.NewContext)
	strat := cfg.Algorithm.Strategy()
	build, err := builder(cfg, strat, sp.Train.Classes, ch, h, w, dev)
	if err != nil {
		return nil, err
	}
	if se.floor, err = checkMemory(cfg, strat, build, dev); err != nil {
		return nil, err
	}
	if err := interrupted(ctx, "partitioning the data"); err != nil {
		return nil, err
	}
	train, err := data.UploadWith(fed.Train, dev, up)
	if err != nil {
		return nil, err
	}
	se.train, se.test = train, train
	if fed.Test != fed.Train {
		if se.test, err = data.UploadWith(fed.Test, dev, up); err != nil {
			se.train.Close()
			return nil, err
		}
	}
	if err := interrupted(ctx, "uploading the data"); err != nil {
		se.closeData()
		return nil, err
	}
	if err := se.start(ctx, cfg, strat, fed, build, dev, dist.FromContext(ctx)); err != nil {
		return nil, err
	}
	return se, nil
}

// images is an image dataset as a run of its config trains on it: the configured subsets
// of its splits, padded. kept[0][i] and kept[1][i] are the dataset's own indices (in its
// training and test split) of the kept training and test image i.
type images struct {
	sp   *data.Split
	kept [2][]int
	full [2]int // the sizes of the dataset's own splits
}

// loadImages opens cfg's image dataset (data.dataset resolved) and keeps the configured
// subsets, padded: the data stage of prepare, which ExportPartition shares so that the
// partition it writes is the one a run trains on.
func loadImages(cfg Config) (images, error) {
	var im images
	sp, err := data.Open(cfg.Data.Dataset)
	if err != nil {
		return im, fmt.Errorf("data.dataset: %w", err)
	}
	im.full = [2]int{sp.Train.N, sp.Test.N}
	if sp.Train, im.kept[0], err = subset(sp.Train, cfg.Data.TrainSamples, cfg.Seed, "subset/train", cfg.Data.Stratified); err != nil {
		return im, fmt.Errorf("data.train_samples: %w", err)
	}
	if sp.Test, im.kept[1], err = subset(sp.Test, cfg.Data.TestSamples, cfg.Seed, "subset/test", cfg.Data.Stratified); err != nil {
		return im, fmt.Errorf("data.test_samples: %w", err)
	}
	if cfg.Data.PadTo > 0 {
		if sp.Train, err = data.PadTo(sp.Train, cfg.Data.PadTo); err == nil {
			sp.Test, err = data.PadTo(sp.Test, cfg.Data.PadTo)
		}
		if err != nil {
			return im, fmt.Errorf("data.pad_to: %w", err)
		}
	}
	im.sp = sp
	return im, nil
}

// flConfig is the fl.Config of cfg's train section on dev, with train.workers as given
// (start replaces 0 with the count it chooses) and no clients per round yet.
func (cfg Config) flConfig(dev cuda.Device) fl.Config {
	t := cfg.Train
	fc := fl.Config{Rounds: t.Rounds, Epochs: t.Epochs, Batch: t.Batch, LR: t.LR, Momentum: t.Momentum, WeightDecay: t.WeightDecay,
		EvalEvery: t.EvalEvery, Sequential: t.Sequential, Seed: cfg.Seed, Device: dev, Graphs: !t.Eager, EvalChunk: t.EvalChunk,
		EvalBatch: t.EvalBatch, Protocol: fl.EvalProtocol(t.EvalProtocol), Workers: t.Workers, Stack: t.Stack, DropLast: t.DropLast}
	if cfg.Data.Augment {
		fc.Augment = data.Augment{Pad: 4, Flip: true}
	}
	if t.Precision == "bf16" {
		fc.Autocast = cuda.BFloat16
	}
	return fc
}

// start builds the federated run on the session's uploaded data; on an error it frees
// the data.
//
// With a process group of several ranks (dist.FromContext) the run trains across
// processes; on CUDA each rank uses the group's GPU (LOCAL_RANK).
func (se *session) start(ctx context.Context, cfg Config, strat fl.Strategy, fed *data.Federated, build fl.Builder, dev cuda.Device, g *cuda.ProcessGroup) error {
	var err error
	if se.warning, err = steplessClients(cfg, strat, fed.Part); err != nil {
		se.closeData()
		return err
	}
	t := cfg.Train
	fc := cfg.flConfig(dev)
	fc.PerRound = int(t.Participation * float64(len(fed.Part.Train)))
	fc.Group, fc.Workers = g, workersFor(t, dev)
	matmul := "highest" // the process-wide setting, so each run sets it
	if t.Precision == "tf32" {
		matmul = "high"
	}
	err = cuda.SetMatmulPrecision(matmul)
	if err == nil {
		se.run, err = fl.NewContext(ctx, fc, strat, fed, se.train, se.test, build)
	}
	if err != nil {
		se.closeData()
		if ierr := interrupted(ctx, "building the models"); ierr != nil {
			return ierr
		}
		return err
	}
	if !dev.IsCUDA() {
		if se.expected, err = memoryExpected(ctx, cfg, se.run); err != nil {
			se.close()
			return err
		}
	}
	if err := interrupted(ctx, "building the models"); err != nil {
		se.close()
		return err
	}
	return nil
}

// steplessClients checks that local training takes steps: with train.drop_last a client
// holding fewer samples than one step takes (train.batch, times the batches of a step of
// the algorithm's) never trains. No training client taking a step is an error naming the
// keys; some is a warning, returned for the log before the first round.
func steplessClients(cfg Config, strat fl.Strategy, part data.Partition) (string, error) {
	if !cfg.Train.DropLast {
		return "", nil
	}
	per := fl.BatchesPerStep(strat)
	need := per * cfg.Train.Batch
	idle, clients, largest := 0, 0, 0
	for c, samples := range part.Train {
		if slices.Contains(part.Novel, c) {
			continue // never trained
		}
		clients++
		largest = max(largest, len(samples))
		if len(samples) < need {
			idle++
		}
	}
	step := fmt.Sprintf("train.batch %d", cfg.Train.Batch)
	if per > 1 {
		step = fmt.Sprintf("%d batches of train.batch %d, algorithm %s", per, cfg.Train.Batch, cfg.Algorithm.Name)
	}
	switch {
	case idle == 0:
		return "", nil
	case idle == clients:
		return "", fmt.Errorf("train.drop_last: true keeps only whole steps of %d samples (%s), but no training client holds that many (the largest holds %d): no client would take a training step; lower train.batch or set train.drop_last: false",
			need, step, largest)
	}
	return fmt.Sprintf("warning: train.drop_last: %d of the %d training clients hold fewer than the %d samples of one step (%s) and never take a training step", idle, clients, need, step), nil
}

// Evaluate evaluates every client's personalized model from the run's last checkpoint.
func Evaluate(dir string) (fl.EvalResult, int, error) {
	if err := notAGrid(dir, "pfl eval"); err != nil {
		return fl.EvalResult{}, 0, err
	}
	cfg, err := LoadRunConfig(dir)
	if err != nil {
		return fl.EvalResult{}, 0, err
	}
	if err := cfg.Validate(); err != nil {
		return fl.EvalResult{}, 0, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	if len(cfg.Suite) > 0 {
		return fl.EvalResult{}, 0, fmt.Errorf("%s is a suite; evaluate its members (Runs lists them)", dir)
	}
	// before the data is loaded: a run stopped before its first checkpoint has nothing to evaluate
	if _, err := os.Stat(filepath.Join(dir, checkpointFile)); err != nil {
		return fl.EvalResult{}, 0, fmt.Errorf("%s has no checkpoint yet: no round was saved", dir)
	}
	se, err := prepare(context.Background(), cfg)
	if err != nil {
		return fl.EvalResult{}, 0, err
	}
	defer se.close()
	if _, err := restore(dir, cfg, se.run); err != nil {
		return fl.EvalResult{}, 0, err
	}
	ev, err := se.run.Evaluate()
	return ev, len(se.run.History), err
}

// openRunDir checks that dir may be written by this run: a fresh run claims it
// (claimDir: only what pfl wrote, an earlier run only with opts.Overwrite); a resumed one
// needs a checkpoint. A run stopped before its first checkpoint (a second signal during
// round 1) has its config.json but no checkpoint and no round: resuming it starts it
// afresh, which openRunDir reports by returning false for resume. A run without a
// checkpoint that records rounds (a finished run whose checkpoint was deleted) is refused:
// starting it afresh would replace its results.
func openRunDir(dir string, resume bool, opts Options) (bool, error) {
	if !resume {
		return false, claimDir(dir, "run", opts.Overwrite, opts.Observer)
	}
	_, err := os.Stat(filepath.Join(dir, checkpointFile))
	if err == nil {
		return true, nil
	}
	if _, cerr := os.Stat(filepath.Join(dir, "config.json")); cerr != nil || pflDir(dir) != nil {
		return false, fmt.Errorf("%s has no checkpoint to resume from (%v)", dir, err)
	}
	if !failedStart(dir) {
		return false, fmt.Errorf("%s has no %s to resume from, but records rounds done (%s): starting it afresh would replace them; restore the checkpoint, or start the run again with --overwrite",
			dir, checkpointFile, roundsRecorded(dir))
	}
	return false, nil
}

// roundsRecorded says which files of the run in dir record rounds done, for messages.
func roundsRecorded(dir string) string {
	var what []string
	if b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl")); err == nil && len(b) > 0 {
		what = append(what, fmt.Sprintf("%d line(s) of metrics.jsonl", bytes.Count(b, []byte("\n"))))
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		what = append(what, "summary.json")
	}
	if len(what) == 0 {
		return "files beyond those of its set-up"
	}
	return strings.Join(what, ", ")
}

// startRunDir makes a fresh run's directory (replacing an old one when overwriting) and
// writes config.json and the partition's description.
func startRunDir(dir string, cfg Config, se *session) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return err
	}
	return se.manifest(dir)
}

func run(ctx context.Context, cfg Config, resume bool, opts Options) (*Result, error) {
	obs := opts.Observer
	if obs == nil {
		obs = quiet{}
	}
	dir := filepath.Join(cfg.Out, cfg.Name)
	// Across processes only rank 0 writes the run directory (checkpoints, metrics,
	// summary, plots, TensorBoard); every rank reads the checkpoint it resumes from.
	writes := dist.Writes(dist.FromContext(ctx))
	if writes {
		unlock, err := lockDir(dir)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	if writes || resume {
		asked := resume
		var err error
		if resume, err = openRunDir(dir, resume, opts); err != nil {
			return nil, err
		}
		if asked && !resume {
			obs.Log(fmt.Sprintf("%s stopped before its first checkpoint: starting it afresh", dir))
		}
	}
	se, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer se.close()
	run, t := se.run, cfg.Train
	var before float64 // the seconds the rounds restored took, in earlier processes
	if resume {
		if before, err = restore(dir, cfg, run); err != nil {
			return nil, err
		}
		if writes {
			if res, ok := finishedRun(dir, cfg, run); ok {
				if d := res.Summary.Diverged; d != 0 {
					if opts.StopOnDivergence {
						return nil, fmt.Errorf("%s diverged at round %d before (its training loss was not finite); start it afresh with --overwrite", dir, d)
					}
					obs.Log(fmt.Sprintf("%s diverged at round %d before; nothing to do (it would diverge again: start it afresh with --overwrite and other settings)", dir, d))
					return res, nil
				}
				obs.Log(fmt.Sprintf("%s finished its %d rounds before; nothing to do (raise train.rounds with --set to train more)", dir, t.Rounds))
				return res, nil
			}
		}
		// the resumable keys may have changed (more rounds): config.json follows
		if writes {
			if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
				return nil, err
			}
		}
		obs.Log(fmt.Sprintf("resumed %s after round %d", dir, len(run.History)))
	} else if writes {
		// a signal during set-up stops it here: the run's directory is not created
		if err := interrupted(ctx, "setting up the run"); err != nil {
			return nil, err
		}
		if err := startRunDir(dir, cfg, se); err != nil {
			return nil, err
		}
	}
	if !writes {
		return follow(ctx, dir, run, cfg.Train.Rounds, obs)
	}
	// metrics.jsonl is rewritten from the history, so lines of rounds after the
	// checkpoint (a run killed mid-way) disappear.
	metrics, err := os.Create(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return nil, err
	}
	defer metrics.Close()
	enc := json.NewEncoder(metrics)
	for _, m := range run.History {
		if err := enc.Encode(roundLine(m)); err != nil {
			return nil, err
		}
	}
	dev, _ := cuda.ParseDevice(cfg.Device)
	if err := recordMachine(dir, dev, resume, run.Workers()); err != nil {
		return nil, err
	}
	tb, err := openTB(dir, run.History, run.Novel())
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	defer tb.Close()
	obs.Log(memoryEstimate(se.floor, dev))
	if se.warning != "" {
		obs.Log(se.warning)
	}
	if !dev.IsCUDA() {
		obs.Log(fmt.Sprintf("cpu: %d client group(s) trained at once, one per thread (train.workers)", run.Workers()))
		if se.expected != "" {
			obs.Log(se.expected)
		}
	}
	start := time.Now()
	wall := func() float64 { return before + time.Since(start).Seconds() } // every segment's rounds
	samples := 0
	first := len(run.History)
	for round := first; round < t.Rounds; round++ {
		m, err := run.Round(round)
		if err != nil {
			if dist.FromContext(ctx) != nil {
				// across processes a round can fail half-way through its all-reduces, with
				// the global model holding a partial sum: the last checkpoint stays
				if _, serr := os.Stat(filepath.Join(dir, checkpointFile)); serr != nil {
					return nil, fmt.Errorf("%w; no checkpoint was written yet: start the run again with --overwrite", err)
				}
				return nil, fmt.Errorf("%w; the last checkpoint in %s is kept", err, dir)
			}
			// the failed round changed neither the global model nor the store
			if cerr := checkpoint(dir, cfg, run, wall()); cerr != nil {
				return nil, fmt.Errorf("%w (and saving the last good checkpoint failed: %v)", err, cerr)
			}
			var div *fl.DivergedError
			if !errors.As(err, &div) {
				return nil, fmt.Errorf("%w; the last good state (after round %d) is saved in %s", err, len(run.History), dir)
			}
			res, derr := diverged(dir, cfg, opts.Place, run, div, wall())
			if derr != nil {
				return nil, fmt.Errorf("%w (and writing its results failed: %v)", err, derr)
			}
			if opts.StopOnDivergence {
				return nil, fmt.Errorf("%w; the last good state (after round %d) is saved in %s", err, len(run.History), dir)
			}
			obs.Log(fmt.Sprintf("%s diverged at round %d (%v): the run ends here, its results say so", dir, div.Round, err))
			return res, nil
		}
		samples += m.Samples
		if err := enc.Encode(roundLine(m)); err != nil {
			return nil, err
		}
		if err := tb.add(m); err != nil {
			return nil, err
		}
		obs.Round(m, round+1, t.Rounds, float64(samples)/time.Since(start).Seconds())
		last := round+1 == t.Rounds
		// a signal during the last round still gets the summary; across processes the
		// ranks stop after the same round
		stop, err := dist.Any(dist.FromContext(ctx), ctx.Err() != nil && !last)
		if err != nil {
			return nil, err
		}
		if (round+1)%t.CheckpointEvery == 0 || last || stop {
			if err := checkpoint(dir, cfg, run, wall()); err != nil {
				return nil, err
			}
			obs.Log(fmt.Sprintf("checkpoint round %d", round+1))
		}
		if stop {
			return nil, &Interrupted{Round: round + 1, Resume: dir}
		}
	}
	obs.Log(memoryPeak(dev))
	res := &Result{Dir: dir, History: run.History, Novel: run.Novel()}
	res.Summary = summarize(cfg.Name, run.History, cfg.Train.TailRounds, run.Novel())
	res.Summary.named(cfg, opts.Place)
	res.Summary.EvalProtocol, res.Summary.Resources = cfg.Train.EvalProtocol, run.Resources()
	res.Summary.WallSeconds, res.Summary.SamplesPerSec = throughput(run.History, wall())
	if res.Summary.Novel, err = studyNovel(dir, cfg, run); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, "summary.json"), res.Summary); err != nil {
		return nil, err
	}
	if err := plots(dir, cfg.Name, run.History, run.Novel()); err != nil {
		return nil, err
	}
	if err := exportEmbeddings(dir, run); err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "embeddings.csv")); err == nil && run.Clients() > 1 {
		if err := EmbeddingTSNE(dir); err != nil {
			return nil, fmt.Errorf("embeddings: %w", err)
		}
	}
	return res, nil
}

// diverged writes the results of a run whose round div.Round had a training loss that is not
// finite: the summary (with the round) and the figures of the rounds before it. Its
// checkpoint holds the last good state; resuming the run returns these results.
func diverged(dir string, cfg Config, place Place, run *fl.Run, div *fl.DivergedError, wall float64) (*Result, error) {
	s := summarize(cfg.Name, run.History, cfg.Train.TailRounds, run.Novel())
	s.named(cfg, place)
	s.EvalProtocol, s.Resources, s.Diverged = cfg.Train.EvalProtocol, run.Resources(), div.Round
	s.WallSeconds, s.SamplesPerSec = throughput(run.History, wall)
	if err := writeJSON(filepath.Join(dir, "summary.json"), s); err != nil {
		return nil, err
	}
	if err := plots(dir, cfg.Name, run.History, run.Novel()); err != nil {
		return nil, err
	}
	return &Result{Dir: dir, History: run.History, Novel: run.Novel(), Summary: s}, nil
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

// finishedRun is the result of the finished run in dir, read back from its summary.json,
// when the run has done all its rounds, or diverged after the rounds its checkpoint holds,
// and written its summary: resuming it has nothing to do and writes nothing (a diverged
// run would diverge again at the same round). False when the summary is missing or is not
// this run's (a run killed between its last checkpoint and its summary finishes writing
// its files).
func finishedRun(dir string, cfg Config, run *fl.Run) (*Result, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, false
	}
	var s Summary
	if json.Unmarshal(b, &s) != nil || s.Rounds != len(run.History) {
		return nil, false
	}
	if s.Diverged == 0 && s.Rounds != cfg.Train.Rounds {
		return nil, false
	}
	return &Result{Dir: dir, History: run.History, Novel: run.Novel(), Summary: s}, true
}

// metricsLine is one line of metrics.jsonl. Its round counts from 1, as the console, the
// plots, TensorBoard and every table number rounds (fl.RoundMetrics' Round is the loop's
// 0-based index).
// Its floats are jsonfloat.Floats: a non-finite value (a diverged run's loss) is written as
// the string "NaN", "+Inf" or "-Inf".
type metricsLine struct {
	Round     int               `json:"round"`
	Clients   []int             `json:"clients"`
	TrainLoss jsonfloat.Float   `json:"train_loss"`
	Samples   int               `json:"samples"`
	Micro     *jsonfloat.Float  `json:"accuracy,omitempty"`
	Mean      *jsonfloat.Float  `json:"client_mean,omitempty"`
	Std       *jsonfloat.Float  `json:"client_std,omitempty"`
	PerClient []jsonfloat.Float `json:"per_client,omitempty"`
	DataS     float64           `json:"time_data_s"`
	TrainS    float64           `json:"time_train_s"`
	AggS      float64           `json:"time_aggregate_s"`
	EvalS     float64           `json:"time_eval_s"`
}

func roundLine(m fl.RoundMetrics) metricsLine {
	l := metricsLine{Round: m.Round + 1, Clients: m.Clients, TrainLoss: jsonfloat.Float(m.TrainLoss), Samples: m.Samples,
		DataS: m.Time.Data.Seconds(), TrainS: m.Time.Train.Seconds(), AggS: m.Time.Aggregate.Seconds(), EvalS: m.Time.Eval.Seconds()}
	if e := m.Eval; e != nil {
		micro, mean, std := jsonfloat.Float(e.Micro), jsonfloat.Float(e.Mean), jsonfloat.Float(e.Std)
		l.Micro, l.Mean, l.Std, l.PerClient = &micro, &mean, &std, jsonfloat.Slice(e.Accuracy)
	}
	return l
}

// summarize computes both protocols' numbers; the per-client percentiles leave out the
// novel clients, which never trained (EvalResult's own statistics already do).
func summarize(name string, h []fl.RoundMetrics, tailRounds int, novel []int) Summary {
	s := Summary{Name: name, Rounds: len(h)}
	var last *fl.EvalResult
	var tail, tailRound []float64
	for _, m := range h {
		s.ClientUpdates += len(m.Clients)
		if m.Eval == nil {
			continue
		}
		last = m.Eval
		if s.BestRound == 0 || m.Eval.Micro > s.Best || math.IsNaN(s.Best) {
			s.Best, s.BestRound = m.Eval.Micro, m.Round+1
		}
		// the official code averages the evaluations of rounds (1-based) >= test_round =
		// rounds - 200: 41 evaluations at 1,500 rounds, every 5, from round 1,300 on
		if m.Round+1 >= len(h)-tailRounds {
			tail = append(tail, m.Eval.Micro)
			tailRound = append(tailRound, float64(m.Round+1))
		}
	}
	if last == nil {
		return s
	}
	s.FinalMicro, s.FinalMean, s.FinalStd = last.Micro, last.Mean, last.Std
	var acc []float64
	for c, a := range last.Accuracy {
		if !slices.Contains(novel, c) {
			acc = append(acc, a)
		}
	}
	if len(acc) == 0 { // every client is novel (a crafted history): no percentiles
		return s
	}
	slices.Sort(acc)
	q := func(p float64) float64 { return acc[min(int(p*float64(len(acc))), len(acc)-1)] }
	s.P10, s.P50, s.P90 = q(0.1), q(0.5), q(0.9)
	worst := max(len(acc)/10, 1)
	for _, a := range acc[:worst] {
		s.Worst10 += a / float64(worst)
	}
	for _, a := range tail {
		s.TailMean += a / float64(len(tail))
	}
	for _, a := range tail {
		s.TailStd += (a - s.TailMean) * (a - s.TailMean) / float64(len(tail))
	}
	s.TailStd = math.Sqrt(s.TailStd)
	s.TailEvals = len(tail)
	s.TailTrend = trend(tailRound, tail)
	s.Falling = falling(s, trendNoise(tailRound, s.TailMean, predictions(last, novel)))
	return s
}

// predictions is the number of test predictions an evaluation's micro accuracy counts (the
// clients that train); 0 when the evaluation does not record them (a crafted history).
func predictions(e *fl.EvalResult, novel []int) int {
	n := 0
	for c, k := range e.Count {
		if !slices.Contains(novel, c) {
			n += k
		}
	}
	return n
}

// trendNoise is the standard error of a tail trend (see trend) that the test set's sampling
// alone gives: each evaluation's micro accuracy p over n predictions has a binomial
// standard error √(p(1−p)/n), and the least-squares rise across rounds x has that times
// span(x)/√Σ(x−x̄)². 0 when n or the rounds cannot give one.
func trendNoise(x []float64, p float64, n int) float64 {
	if n == 0 || len(x) < 2 || !(p >= 0 && p <= 1) {
		return 0
	}
	var mx, sxx float64
	for _, v := range x {
		mx += v / float64(len(x))
	}
	for _, v := range x {
		sxx += (v - mx) * (v - mx)
	}
	if sxx == 0 {
		return 0
	}
	return math.Sqrt(p*(1-p)/float64(n)) * (slices.Max(x) - slices.Min(x)) / math.Sqrt(sxx)
}

// The thresholds of a falling curve (falling): a collapse is a last evaluation at least
// collapseDrop under the run's best; a falling tail has a trend below −fallSpreads × the
// tail's spread and a fall larger than the test set's sampling explains: at least fallMin,
// and more than fallNoise × the trend's sampling error (trendNoise). Without the floor a
// tail that drifts by a few tenths of a point in a straight line would count (four evenly
// spaced evaluations on a line have a trend of −2.7 × their spread, whatever its size),
// while on 2,000 test images at 94 % the trend over four evaluations every 5 rounds has a
// sampling error of 0.7 points from the test set alone.
const (
	collapseDrop = 0.10
	fallSpreads  = 2.0
	fallMin      = 0.01
	fallNoise    = 2.0
)

// falling is why s's curve counts as falling, or "" when it does not; noise is the tail
// trend's sampling error (trendNoise; 0 when unknown).
func falling(s Summary, noise float64) string {
	if s.Best-s.FinalMicro >= collapseDrop {
		return fmt.Sprintf("last evaluation %.2f, %.2f points under its best (%.2f after round %d)",
			100*s.FinalMicro, 100*(s.Best-s.FinalMicro), 100*s.Best, s.BestRound)
	}
	floor := math.Max(fallMin, fallNoise*noise)
	if s.TailEvals >= 2 && s.TailTrend < -fallSpreads*s.TailStd && s.TailTrend <= -floor {
		return fmt.Sprintf("trend %+.2f over the last evaluations, below −%g × their spread (%.2f)",
			100*s.TailTrend, fallSpreads, 100*s.TailStd)
	}
	return ""
}

// trend is the rise of the least-squares line through (x_i, y_i) across x's span:
// slope × (max x − min x); 0 for fewer than two distinct x.
func trend(x, y []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var mx, my float64
	for i := range x {
		mx += x[i] / float64(len(x))
		my += y[i] / float64(len(x))
	}
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx * (slices.Max(x) - slices.Min(x))
}

// normalization is data.normalize's fixed constants for images of ch stored channels (nil
// for "dataset": the caller computes the training split's statistics). Three constants
// need three channels, stored or made by data.channels: 3.
func normalization(d DataConfig, ch int) (mean, std []float64, err error) {
	c, ok := normalizations[d.Normalize]
	if !ok {
		return nil, nil, nil
	}
	if len(c[0]) == 1 {
		return slices.Repeat(c[0], ch), slices.Repeat(c[1], ch), nil
	}
	if ch != len(c[0]) && d.Channels != len(c[0]) {
		return nil, nil, fmt.Errorf("data.normalize: %s has %d channels' constants, the images %d (data.channels: 3 repeats a grey channel)", d.Normalize, len(c[0]), ch)
	}
	return c[0], c[1], nil
}

// spec is the model config as a model.Spec, without the data's geometry.
func (mc ModelConfig) spec() model.Spec {
	// model.Spec reads 0 as "the preset's" (or the algorithm's), which is what an unset key
	// means; Validate has refused a key set to 0
	return model.Spec{Preset: mc.Preset, Depth: valueOf(mc.Depth), Patch: valueOf(mc.Patch), Dim: valueOf(mc.Dim),
		Heads: valueOf(mc.Heads), HeadDim: valueOf(mc.HeadDim), MLP: valueOf(mc.MLP), Prompts: valueOf(mc.Prompts),
		Prefix: model.PrefixConfig{Blocks: valueOf(mc.Prefix.Blocks), Mid: valueOf(mc.Prefix.Mid), Scale: realOf(mc.Prefix.Scale),
			Kind: model.PrefixKind(mc.Prefix.Kind), Form: model.PrefixForm(mc.Prefix.Form), Init: model.PrefixInit(mc.Prefix.Init),
			Length: valueOf(mc.Prefix.Length)},
		Adapter: model.MLPAdapterConfig{Mid: valueOf(mc.Adapter.Mid), Scale: realOf(mc.Adapter.Scale), Shared: mc.Adapter.Shared}}
}

// shaped is the configured model's spec as the algorithm trains it: a Shaper (FedPerfix
// and its plug-in variants) adds its plug-in.
func (c Config) shaped(strat fl.Strategy, s model.Spec) (model.Spec, error) {
	s, err := fl.Shape(strat, s)
	if err != nil {
		return s, fmt.Errorf("algorithm.name %s: %w", c.Algorithm.Name, err)
	}
	return s, c.checkLocalBlocks(s)
}

// checkLocalBlocks refuses an algorithm.local_blocks entry that names no block of the
// model (block 11 of a 6-block ViT would keep nothing local, silently).
func (c Config) checkLocalBlocks(s model.Spec) error {
	if len(c.Algorithm.LocalBlocks) == 0 {
		return nil
	}
	f, err := s.Builder()
	if err != nil {
		return nil // modelBuilder reports it with the keys that shape the model
	}
	m, err := f(1, cuda.CPU, cuda.Float32, nil) // shapes only
	if err != nil {
		return nil
	}
	defer m.Close()
	last := -1
	for _, p := range m.Params().List {
		last = max(last, p.Block)
	}
	for _, b := range c.Algorithm.LocalBlocks {
		if b > last {
			return fmt.Errorf("algorithm.local_blocks: block %d, but model %s has blocks 0 to %d", b, s.Preset, last)
		}
	}
	return nil
}

// builder builds the configured model for the dataset: image models take the data's
// square side, channels and classes (data.image_size resizes the images, data.channels
// repeats a grey channel), so one preset serves CIFAR-sized and 224-pixel inputs alike.
func builder(cfg Config, strat fl.Strategy, nClasses, nCh, h, w int, dev cuda.Device) (fl.Builder, error) {
	if h != w {
		return nil, fmt.Errorf("data.image_size: the images are %d×%d; the models take square images (data.image_size resizes)", h, w)
	}
	s := cfg.Model.spec()
	s.Image, s.Channels, s.Classes = int64(h), int64(nCh), int64(nClasses)
	s, err := cfg.shaped(strat, s)
	if err != nil {
		return nil, err
	}
	return modelBuilder(s, dev)
}

// modelBuilder is the fl.Builder of s in float32 on dev; its error names the keys that
// shape the model.
func modelBuilder(s model.Spec, dev cuda.Device) (fl.Builder, error) {
	f, err := s.Builder()
	if err != nil {
		return nil, fmt.Errorf("model.preset %s cannot be built for this data (data.image_size, data.channels and the model.* size keys shape it): %w", s.Preset, err)
	}
	return func(k int, g *cuda.Generator) (model.Model, error) { return f(k, dev, cuda.Float32, g) }, nil
}

// follow is run for a rank other than 0 of a run across processes: the same rounds, in
// step with the other ranks through the run's collectives, and nothing written.
func follow(ctx context.Context, dir string, run *fl.Run, rounds int, obs Observer) (*Result, error) {
	start := time.Now()
	samples := 0
	for round := len(run.History); round < rounds; round++ {
		m, err := run.Round(round)
		if err != nil {
			return nil, err
		}
		samples += m.Samples
		obs.Round(m, round+1, rounds, float64(samples)/time.Since(start).Seconds())
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
