package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/data/fetch"
	"pfl/engine/dist"
	"pfl/engine/fl"
	"pfl/engine/model"
	"pfl/engine/rundir"
)

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

// prepare loads and partitions the data, uploads it and builds the run, checking ctx
// between the stages; it writes nothing.
func prepare(ctx context.Context, cfg config.Config) (*session, error) {
	if err := useThreads(); err != nil { // before the first tensor op: the data's too
		return nil, err
	}
	dev := cfg.Device
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
	return prepareImages(ctx, cfg, dev)
}

// prepareImages is prepare for an image dataset (data.dataset resolved): the configured
// subsets, partitioned, normalized and uploaded, and the run's model for their shape.
func prepareImages(ctx context.Context, cfg config.Config, dev cuda.Device) (*session, error) {
	im, err := loadImages(cfg)
	if err != nil {
		return nil, err
	}
	sp := im.sp
	if err := interrupted(ctx, "loading the data"); err != nil {
		return nil, err
	}
	fed, err := sp.Partition(cfg.Partition())
	if err != nil {
		key := "data.partition"
		if cfg.Data.Partition == string(data.MethodFile) {
			key = "data.partition_file" // the file's lists are what was refused
		}
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	se := &session{manifest: fed.WriteManifest}
	up := data.UploadConfig{Size: cfg.Data.ImageSize, Channels: cfg.Data.Channels}
	if up.Mean, up.Std, err = cfg.Data.Normalization(sp.Train.C); err != nil {
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
	if err := se.upload(ctx, fed, dev, up); err != nil {
		return nil, err
	}
	if err := se.start(ctx, cfg, strat, fed, build, dev, dist.FromContext(ctx)); err != nil {
		return nil, err
	}
	return se, nil
}

// upload puts the federation's training and test images on dev (the test split may be the
// training split itself), freeing what it uploaded when it fails or ctx ends.
func (se *session) upload(ctx context.Context, fed *data.Federated, dev cuda.Device, up data.UploadConfig) error {
	train, err := data.UploadWith(fed.Train, dev, up)
	if err != nil {
		return err
	}
	se.train, se.test = train, train
	if fed.Test != fed.Train {
		if se.test, err = data.UploadWith(fed.Test, dev, up); err != nil {
			se.train.Close()
			return err
		}
	}
	if err := interrupted(ctx, "uploading the data"); err != nil {
		se.closeData()
		return err
	}
	return nil
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
func loadImages(cfg config.Config) (images, error) {
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

// start builds the federated run on the session's uploaded data; on an error it frees
// the data.
//
// With a process group of several ranks (dist.FromContext) the run trains across
// processes; on CUDA each rank uses the group's GPU (LOCAL_RANK).
func (se *session) start(ctx context.Context, cfg config.Config, strat fl.Strategy, fed *data.Federated, build fl.Builder, dev cuda.Device, g *cuda.ProcessGroup) error {
	var err error
	if se.warning, err = steplessClients(cfg, strat, fed.Part); err != nil {
		se.closeData()
		return err
	}
	t := cfg.Train
	fc := cfg.FL()
	fc.Device = dev
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
func steplessClients(cfg config.Config, strat fl.Strategy, part data.Partition) (string, error) {
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
	if err := rundir.NotAGrid(dir, "pfl eval"); err != nil {
		return fl.EvalResult{}, 0, err
	}
	cfg, err := rundir.LoadConfig(dir)
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
	if _, err := os.Stat(filepath.Join(dir, rundir.CheckpointFile)); err != nil {
		return fl.EvalResult{}, 0, fmt.Errorf("%s has no checkpoint yet: no round was saved", dir)
	}
	se, err := prepare(context.Background(), cfg)
	if err != nil {
		return fl.EvalResult{}, 0, err
	}
	defer se.close()
	if _, err := rundir.Restore(dir, cfg, se.run); err != nil {
		return fl.EvalResult{}, 0, err
	}
	ev, err := se.run.Evaluate()
	return ev, len(se.run.History), err
}

// shaped is the configured model's spec as the algorithm trains it: a Shaper (FedPerfix
// and its plug-in variants) adds its plug-in.
func shaped(c config.Config, strat fl.Strategy, s model.Spec) (model.Spec, error) {
	s, err := fl.Shape(strat, s)
	if err != nil {
		return s, fmt.Errorf("algorithm.name %s: %w", c.Algorithm.Name, err)
	}
	return s, checkLocalBlocks(c, s)
}

// checkLocalBlocks refuses an algorithm.local_blocks entry that names no block of the
// model (block 11 of a 6-block ViT would keep nothing local, silently).
func checkLocalBlocks(c config.Config, s model.Spec) error {
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
func builder(cfg config.Config, strat fl.Strategy, nClasses, nCh, h, w int, dev cuda.Device) (fl.Builder, error) {
	if h != w {
		return nil, fmt.Errorf("data.image_size: the images are %d×%d; the models take square images (data.image_size resizes)", h, w)
	}
	s := cfg.Model.Spec()
	s.Image, s.Channels, s.Classes = int64(h), int64(nCh), int64(nClasses)
	s, err := shaped(cfg, strat, s)
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
