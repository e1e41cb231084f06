package harness

import (
	"fmt"
	"time"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
)

// CIFAR-100's sizes cap the synthetic pools: clients beyond them share images (the
// 100-client FedTP workload reads each image twice), as the content does not change the
// work and a 100,000-image pool would only cost host time and device memory.
const (
	cifarTrain = 50000
	cifarTest  = 10000
	cifarSide  = 32
)

// Run runs w on dev: Warmup untimed rounds, Measure timed rounds, one untimed and one
// timed evaluation of every client, and reports. It drives libtorch from one pinned OS
// thread, as engine/fl requires.
func Run(w Workload, dev cuda.Device) (*Report, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := CheckDevice(dev); err != nil {
		return nil, err
	}
	var rep *Report
	err := cuda.Pinned(func() error {
		var err error
		rep, err = run(w, dev)
		return err
	})
	return rep, err
}

// CheckDevice loads the native library and reports, naming the fix, a CUDA device it
// cannot use: a CPU build fails only at the first op otherwise, after minutes of setup.
func CheckDevice(dev cuda.Device) error {
	info, err := cuda.Capabilities()
	if err != nil || !dev.IsCUDA() {
		return err
	}
	if !info.HasCUDA {
		return fmt.Errorf("harness: %s: %w (%s); build the CUDA one with 'bash bench/gpu.sh run' and set PFL_NATIVE_LIB to it", dev, cuda.ErrNoCUDA, info.LibraryPath)
	}
	n, err := cuda.CUDADeviceCount()
	if err != nil {
		return err
	}
	if dev.Index >= n {
		return fmt.Errorf("harness: %s: %d CUDA device(s) visible", dev, n)
	}
	return nil
}

func run(w Workload, dev cuda.Device) (*Report, error) {
	macs, params, err := w.Model.Count(int64(w.Classes))
	if err != nil {
		return nil, err
	}
	rep := newReport(w, dev, macs, params)
	// the peaks first: their 8192² operands must not count towards the run's memory peak
	if rep.PeakFP32, err = PeakTFLOPS(dev, cuda.Float32); err != nil {
		return nil, err
	}
	if dev.IsCUDA() || w.Precision == "bf16" { // a bf16 run's MFU needs the bf16 peak
		if info, err := cuda.Capabilities(); err == nil && info.HasBF16 {
			if rep.PeakBF16, err = PeakTFLOPS(dev, cuda.BFloat16); err != nil {
				return nil, err
			}
		}
	}
	if dev.IsCUDA() {
		if _, _, err := cuda.CUDAMemoryStats(dev.Index, true); err != nil {
			return nil, err
		}
	}

	fed, train, test, err := upload(w, dev)
	if err != nil {
		return nil, err
	}
	defer train.Close()
	defer test.Close()
	build, err := w.Model.Builder(int64(w.Classes), dev)
	if err != nil {
		return nil, err
	}
	cfg := w.experiment()
	strat := cfg.Algorithm.Strategy()
	// Rounds is one more than the rounds run, so Round never evaluates on its own: the
	// evaluation is timed apart.
	fc := fl.Config{Rounds: w.Warmup + w.Measure + 1, PerRound: w.PerRound, Epochs: w.Epochs, Batch: w.Batch,
		LR: w.LR, Momentum: w.Momentum, WeightDecay: w.WeightDecay, Seed: 1, Device: dev, Graphs: !w.Eager,
		EvalChunk: w.EvalChunk}
	matmul := "highest"
	switch w.Precision {
	case "", "fp32":
	case "tf32":
		matmul = "high"
	case "bf16":
		fc.Autocast = cuda.BFloat16
	default:
		return nil, fmt.Errorf("harness: %s: precision %q; want fp32, tf32 or bf16", w.Name, w.Precision)
	}
	if err := cuda.SetMatmulPrecision(matmul); err != nil {
		return nil, err
	}
	defer cuda.SetMatmulPrecision("highest")
	r, err := fl.New(fc, strat, fed, train, test, build)
	if err != nil {
		return nil, fmt.Errorf("harness: %s: %w", w.Name, err)
	}
	defer r.Close()
	rep.Algorithm = r.Strategy().Name()

	round := func(i int) (fl.RoundMetrics, time.Duration, error) {
		t := time.Now()
		m, err := r.Round(i)
		if err == nil {
			err = cuda.Synchronize(dev) // the aggregation is asynchronous on a GPU
		}
		return m, time.Since(t), err
	}
	for i := 0; i < w.Warmup; i++ {
		if _, _, err := round(i); err != nil {
			return nil, fmt.Errorf("harness: %s: warm-up round %d: %w", w.Name, i, err)
		}
	}
	handles := cuda.LiveTensors()
	var allocated int64
	if dev.IsCUDA() {
		if allocated, _, err = cuda.CUDAMemoryStats(dev.Index, false); err != nil {
			return nil, err
		}
	}
	var rounds []fl.RoundMetrics
	var walls []time.Duration
	for i := w.Warmup; i < w.Warmup+w.Measure; i++ {
		m, wall, err := round(i)
		if err != nil {
			return nil, fmt.Errorf("harness: %s: round %d: %w", w.Name, i, err)
		}
		rounds, walls = append(rounds, m), append(walls, wall)
	}
	rep.HandleGrowth = cuda.LiveTensors() - handles
	if dev.IsCUDA() {
		a, _, err := cuda.CUDAMemoryStats(dev.Index, false)
		if err != nil {
			return nil, err
		}
		rep.MemoryGrowth = a - allocated
	}
	var graphErr error
	if rep.Graphs, graphErr = r.GraphStatus(); graphErr != nil {
		rep.GraphError = graphErr.Error()
	}

	var evalTime time.Duration
	var evalSamples int
	for i := 0; i < 2; i++ { // the first evaluation warms the evaluation's shapes up
		t := time.Now()
		ev, err := r.Evaluate()
		if err == nil {
			err = cuda.Synchronize(dev)
		}
		if err != nil {
			return nil, fmt.Errorf("harness: %s: evaluation: %w", w.Name, err)
		}
		evalTime, evalSamples = time.Since(t), sum(ev.Count)
	}
	if dev.IsCUDA() {
		if _, rep.PeakMemory, err = cuda.CUDAMemoryStats(dev.Index, false); err != nil {
			return nil, err
		}
	}
	rep.measured(rounds, walls, evalTime, evalSamples)
	return rep, nil
}

// upload makes w's synthetic CIFAR-100-shaped data, spreads it over the clients (client c
// takes the next TrainPerClient images of the pool, wrapping around) and uploads it,
// resized on the device when the model takes larger images.
func upload(w Workload, dev cuda.Device) (*data.Federated, *data.DeviceImages, *data.DeviceImages, error) {
	nTrain, nTest := min(w.Clients*w.TrainPerClient, cifarTrain), min(w.Clients*w.TestPerClient, cifarTest)
	trainX := data.Synthetic("c100/train", nTrain, 3, cifarSide, cifarSide, w.Classes, 1)
	testX := data.Synthetic("c100/test", nTest, 3, cifarSide, cifarSide, w.Classes, 2)
	fed := &data.Federated{
		Config: data.PartitionConfig{Method: data.MethodIID, Clients: w.Clients, Seed: 1},
		Train:  trainX, Test: testX,
		Part: data.Partition{Train: spread(w.Clients, w.TrainPerClient, nTrain), Test: spread(w.Clients, w.TestPerClient, nTest)},
	}
	up := data.UploadConfig{}
	up.Mean, up.Std = data.ChannelStats(trainX)
	if side := int(w.Model.Image); side > 0 && side != cifarSide {
		up.Size = side
	}
	train, err := data.UploadWith(trainX, dev, up)
	if err != nil {
		return nil, nil, nil, err
	}
	test, err := data.UploadWith(testX, dev, up)
	if err != nil {
		train.Close()
		return nil, nil, nil, err
	}
	return fed, train, test, nil
}

// spread gives each of clients per consecutive indices of a pool of n, wrapping around.
func spread(clients, per, n int) [][]int {
	parts := make([][]int, clients)
	for c := range parts {
		parts[c] = make([]int, per)
		for j := range parts[c] {
			parts[c][j] = (c*per + j) % n
		}
	}
	return parts
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
