// Package smoke trains a small MLP on synthetic class-conditional Gaussian data. It is the
// end-to-end check that the native library, autograd, multi-tensor updates and scopes
// work on a machine (`pfl smoke`), before any federated experiment is run.
package smoke

import (
	"fmt"
	"math"
	"time"

	"pfl/cuda"
	"pfl/engine/internal/defaults"
)

// Config sets up a smoke run. The zero value of a field means its default.
type Config struct {
	Device  cuda.Device // where to train; default CPU
	Classes int64       // number of Gaussian classes; default 4
	Dim     int64       // input dimension; default 16
	Hidden  int64       // hidden width of the MLP; default 64
	Train   int64       // training samples; default 2048
	Test    int64       // held-out samples; default 2048
	Steps   int         // full-batch SGD steps; default 200
	LR      float64     // learning rate; default 0.5
	Seed    uint64      // seed of every stream; default 1
}

func (c *Config) defaults() {
	defaults.Set(&c.Classes, 4)
	defaults.Set(&c.Dim, 16)
	defaults.Set(&c.Hidden, 64)
	defaults.Set(&c.Train, 2048)
	defaults.Set(&c.Test, 2048)
	defaults.Set(&c.Steps, 200)
	defaults.Set(&c.LR, 0.5)
	defaults.Set(&c.Seed, 1)
	// Device's zero value is {CPU, 0}, not CPU ({CPU, -1}): both mean the host
	defaults.Set(&c.Device, cuda.CPU)
}

// Validate reports a configuration that cannot run, naming the field.
func (c Config) Validate() error {
	c.defaults()
	switch {
	case c.Classes < 2:
		return fmt.Errorf("smoke: classes = %d, want >= 2", c.Classes)
	case c.Dim < 1 || c.Hidden < 1:
		return fmt.Errorf("smoke: dim = %d and hidden = %d must be >= 1", c.Dim, c.Hidden)
	case c.Train < 1 || c.Test < 1:
		return fmt.Errorf("smoke: train = %d and test = %d must be >= 1", c.Train, c.Test)
	case c.Steps < 1:
		return fmt.Errorf("smoke: steps = %d, want >= 1", c.Steps)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("smoke: lr = %g, want a positive number", c.LR)
	}
	return nil
}

// Result is what a smoke run measured.
type Result struct {
	FirstLoss, FinalLoss float64
	TestAccuracy         float64 // on held-out samples of the same distribution
	StepTime             time.Duration
	LeakedTensors        int64 // live handles after the run minus before; 0 when healthy
}

// Run trains and evaluates the MLP on a pinned goroutine.
func Run(cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg.defaults()
	var res Result
	err := cuda.Pinned(func() error {
		before := cuda.LiveTensors()
		r, err := run(cfg)
		res = r
		res.LeakedTensors = cuda.LiveTensors() - before
		return err
	})
	return res, err
}

func run(cfg Config) (Result, error) {
	dev := cfg.Device
	s := cuda.NewScope()
	defer s.Close()
	gen, err := cuda.NewGenerator(cfg.Seed, dev)
	if err != nil {
		return Result{}, err
	}
	defer gen.Close()

	// Class means drawn once, N(0, 1) per coordinate; samples are mean + N(0, 1).
	means := s.Randn(gen, cuda.Float32, dev, cfg.Classes, cfg.Dim)
	sample := func(n int64) (*cuda.Tensor, *cuda.Tensor) {
		y := s.RandInt(gen, 0, cfg.Classes, dev, n)
		x := s.Add(s.IndexSelect(means, 0, y), s.Randn(gen, cuda.Float32, dev, n, cfg.Dim))
		return x, y
	}
	xTrain, yTrain := sample(cfg.Train)
	xTest, yTest := sample(cfg.Test)

	shapes := [][]int64{{cfg.Hidden, cfg.Dim}, {cfg.Hidden}, {cfg.Classes, cfg.Hidden}, {cfg.Classes}}
	fanIn := []int64{cfg.Dim, cfg.Dim, cfg.Hidden, cfg.Hidden}
	params := make([]*cuda.Tensor, len(shapes))
	for i, sh := range shapes {
		params[i] = s.Zeros(cuda.Float32, dev, sh...)
		bound := 1 / math.Sqrt(float64(fanIn[i])) // nn.Linear's default initialization
		s.FillUniform(gen, params[i], -bound, bound)
	}
	if err := s.Err(); err != nil {
		return Result{}, err
	}
	for _, p := range params {
		if err := p.SetRequiresGrad(true); err != nil {
			return Result{}, err
		}
	}
	forward := func(sc *cuda.Scope, x *cuda.Tensor) *cuda.Tensor {
		h := sc.ReLU(sc.Linear(x, params[0], params[1]))
		return sc.Linear(h, params[2], params[3])
	}

	var res Result
	step := cuda.NewScope()
	defer step.Close()
	start := time.Now()
	for i := 0; i < cfg.Steps; i++ {
		step.Reset()
		loss := step.CrossEntropy(forward(step, xTrain), yTrain, nil, cuda.ReduceMean, 0)
		grads := step.Grad([]*cuda.Tensor{loss}, nil, params, cuda.GradOptions{})
		step.ForeachAdd(params, grads, -cfg.LR)
		if err := step.Err(); err != nil {
			return res, fmt.Errorf("smoke: step %d: %w", i+1, err)
		}
		if i == 0 || i == cfg.Steps-1 {
			v, err := loss.Item()
			if err != nil {
				return res, err
			}
			if i == 0 {
				res.FirstLoss = v
			}
			res.FinalLoss = v
		}
	}
	if err := cuda.Synchronize(dev); err != nil {
		return res, err
	}
	res.StepTime = time.Since(start) / time.Duration(cfg.Steps)

	step.Reset()
	step.SetGradEnabled(false)
	correct := step.Eq(step.Argmax(forward(step, xTest), 1, false), yTest)
	acc := step.Mean(step.To(correct, cuda.Float32), false)
	if err := step.Err(); err != nil {
		return res, err
	}
	if res.TestAccuracy, err = acc.Item(); err != nil {
		return res, err
	}
	return res, nil
}
