package main

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"pfl/cuda"
)

// doctor prints what a user needs to know before a run: which native library was loaded,
// the torch it was built against, its capabilities, the devices and the threads.
func doctor(args []string, out io.Writer) error {
	fs := newFlags("doctor", out)
	threads := fs.Int("threads", 0, "set the intra-op threads first (0: leave as is)")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(out, "go:              %s %s/%s, %d CPUs\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	// OpenMP starts every thread it is given: an absurd count would hang the process.
	if limit := 4 * runtime.NumCPU(); *threads < 0 || *threads > limit {
		return fmt.Errorf("--threads %d: want 0 (leave as is) to %d (4 × the %d CPUs)", *threads, limit, runtime.NumCPU())
	}
	if *threads > 0 {
		if err := cuda.SetNumThreads(*threads); err != nil {
			return err
		}
	}
	info, err := cuda.Capabilities()
	if err != nil {
		return err
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(out, "native library:  %s (ABI %d.%d)\n", info.LibraryPath, info.ABIMajor, info.ABIMinor)
	fmt.Fprintf(out, "torch:           %s (cxx11 ABI %s)\n", info.TorchVersion, yes(info.CXX11ABI))
	fmt.Fprintf(out, "bf16:            %s\n", yes(info.HasBF16))
	fmt.Fprintf(out, "fused SDPA:      %s\n", map[bool]string{true: "yes", false: "no (exact math fallback)"}[info.HasSDPA])
	fmt.Fprintf(out, "CUDA build:      %s\n", yes(info.HasCUDA))
	fmt.Fprintf(out, "CUDA graphs:     %s\n", yes(info.HasCUDAGraphs))
	fmt.Fprintf(out, "threads:         %d intra-op per worker (%s)\n", info.NumThreads, threadSource())
	if ts := cuda.CurrentThreadState(); ts.BLASBuild != cuda.BLASUnknown {
		fmt.Fprintf(out, "BLAS:            %v, %d thread(s)\n", ts.BLASBuild, ts.BLAS)
	} else {
		fmt.Fprintln(out, "BLAS:            not OpenBLAS (its threads are its own)")
	}
	if !info.HasCUDA {
		fmt.Fprintln(out, "devices:         cpu (build the CUDA library on a GPU machine with bash bench/gpu.sh)")
		return nil
	}
	fmt.Fprintf(out, "CUDA runtime:    %d.%d\n", info.CUDAVersion/1000, info.CUDAVersion%1000/10)
	n, err := cuda.CUDADeviceCount()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "devices:         cpu + %d CUDA\n", n)
	for i := 0; i < n; i++ {
		name, err := cuda.CUDADeviceName(i)
		if err != nil {
			return err
		}
		free, total, err := cuda.CUDAMemInfo(i)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  cuda:%d  %s, %.1f of %.1f GiB free\n", i, name, float64(free)/(1<<30), float64(total)/(1<<30))
	}
	return nil
}

// threadSource says where the intra-op count comes from: the environment, else pfl's
// default of one thread per worker (the library's, whatever libtorch would choose).
func threadSource() string {
	for _, v := range []string{"OMP_NUM_THREADS", "MKL_NUM_THREADS"} {
		if n, ok := os.LookupEnv(v); ok {
			return v + "=" + n
		}
	}
	return "default; OMP_NUM_THREADS changes it"
}
