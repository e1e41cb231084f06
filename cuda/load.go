package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// LibraryName is the file name of pfl's native library.
const LibraryName = "libpfltorch.so"

// LibraryEnv names the environment variable that points at the native library.
const LibraryEnv = "PFL_NATIVE_LIB"

// BuildCommand is what a user runs to build the native library.
const BuildCommand = "bash scripts/build.sh (CPU) or bash bench/gpu.sh (CUDA)"

var (
	loadOnce sync.Once
	loadErr  error
	loadPath string
)

// Load loads the native library once; later calls return the first outcome. Every
// function of the package that needs the library calls it, so calling it is optional: it
// is there to fail early with a clear message.
func Load() error {
	loadOnce.Do(func() { loadPath, loadErr = load() })
	return loadErr
}

// LibraryPath is the path of the loaded native library ("" before a successful Load).
func LibraryPath() string {
	if Load() != nil {
		return ""
	}
	return loadPath
}

func load() (string, error) {
	if err := checkHostCacheEnv(); err != nil {
		return "", errorf("load", CodeNoLibrary, "%v", err)
	}
	if p := os.Getenv(LibraryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", errorf("load", CodeNoLibrary, "%s=%s: %v; build it with %s", LibraryEnv, p, err, BuildCommand)
		}
		return p, open(p)
	}
	tried := candidates()
	for _, p := range tried {
		if _, err := os.Stat(p); err == nil {
			return p, open(p)
		}
	}
	return "", errorf("load", CodeNoLibrary, "%s not found (looked in %s); build it with %s, or set %s",
		LibraryName, strings.Join(tried, ", "), BuildCommand, LibraryEnv)
}

func open(path string) error {
	if msg := nativeOpen(path); msg != "" {
		return errorf("load", CodeNoLibrary, "%s: %s", path, msg)
	}
	return nil
}

// candidates lists where the library may be: next to the executable, and in build/ of
// the executable's folder, the working directory, and every folder above them.
func candidates() []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	var starts []string
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		add(filepath.Join(dir, LibraryName))
		starts = append(starts, dir)
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			add(filepath.Join(dir, "build", LibraryName))
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return out
}

// Info describes the loaded native library and the libtorch it was built against.
type Info struct {
	LibraryPath   string
	TorchVersion  string // e.g. "1.13.0"
	ABIMajor      int    // PFL_ABI_MAJOR of the library
	ABIMinor      int
	HasCUDA       bool // built against libtorch_cuda
	CUDAAvailable bool // HasCUDA and a device is visible
	HasBF16       bool
	HasSDPA       bool // at::scaled_dot_product_attention (torch >= 2.0); else an exact fallback
	HasCUDAGraphs bool
	CXX11ABI      bool // _GLIBCXX_USE_CXX11_ABI of the build
	NumThreads    int  // intra-op threads
	CUDAVersion   int  // CUDA runtime version, e.g. 13000; 0 without CUDA
}

// Capabilities loads the library and describes it.
func Capabilities() (Info, error) {
	if err := Load(); err != nil {
		return Info{}, err
	}
	c, err := nativeCaps()
	if err != nil {
		return Info{}, err
	}
	info := capsToInfo(c)
	info.LibraryPath = loadPath
	return info, nil
}

// LiveTensors is the native library's count of tensor handles not yet freed (0 when the
// library is not loaded).
func LiveTensors() int64 {
	if Load() != nil {
		return 0
	}
	return nativeLiveTensors()
}

// LiveGenerators is the count of generators not yet closed.
func LiveGenerators() int64 {
	if Load() != nil {
		return 0
	}
	return nativeLiveGenerators()
}

// SetNumThreads sets the intra-op thread count of libtorch (at::set_num_threads) and of
// OpenBLAS's own thread pool, on every OS thread that calls into the library afterwards.
// Until it is called the count is 1, or what OMP_NUM_THREADS or MKL_NUM_THREADS says when
// the environment sets either: never libtorch's machine-chosen default, so a run rounds
// alike on machines whose CPUs libtorch counts differently. pfl's parallelism on the CPU
// is its client groups (train.workers), each on one intra-op thread. An explicit
// OPENBLAS_NUM_THREADS is left to OpenBLAS.
func SetNumThreads(n int) error {
	if err := Load(); err != nil {
		return err
	}
	return nativeSetNumThreads(n)
}

// BLASBuild is how the BLAS under libtorch runs its threads (OpenBLAS's openblas_get_parallel).
type BLASBuild int

// The BLAS builds ThreadState tells apart.
const (
	BLASUnknown BLASBuild = -1 // not OpenBLAS
	BLASSerial  BLASBuild = 0  // OpenBLAS without threads
	BLASPthread BLASBuild = 1  // OpenBLAS's pthreads build: one pool per process
	BLASOpenMP  BLASBuild = 2  // OpenBLAS's OpenMP build: each thread's OpenMP count
)

// String names the build as Debian's packages do.
func (b BLASBuild) String() string {
	switch b {
	case BLASSerial:
		return "OpenBLAS serial"
	case BLASPthread:
		return "OpenBLAS pthreads"
	case BLASOpenMP:
		return "OpenBLAS OpenMP"
	}
	return "not OpenBLAS"
}

// ThreadState is what the calling OS thread computes with.
type ThreadState struct {
	OpenMP    int       // the thread's OpenMP count (omp_get_max_threads); -1 without OpenMP
	Torch     int       // libtorch's intra-op count on this thread (at::get_num_threads)
	BLAS      int       // OpenBLAS's thread count; -1 without OpenBLAS
	BLASBuild BLASBuild // which OpenBLAS runs under libtorch
}

// CurrentThreadState reports the thread counts of the OS thread it runs on (lock the
// goroutine to its thread to ask about a particular one). It does not install the configured
// count first, as every other call does, so a thread that never called in shows the OpenMP
// runtime's default; 0 values when the library cannot load.
func CurrentThreadState() ThreadState {
	if Load() != nil {
		return ThreadState{}
	}
	return nativeThreadState()
}

// SetMatmulPrecision sets libtorch's float32 matmul precision for the process
// (at::globalContext().setFloat32MatmulPrecision): "highest" keeps float32, "high" lets
// CUDA matmuls use TF32, "medium" allows bf16 internally. Other values are an error.
func SetMatmulPrecision(p string) error {
	if err := Load(); err != nil {
		return err
	}
	return nativeSetMatmulPrecision(p)
}

// Pinned runs f on a new goroutine locked to its OS thread and returns f's error. Use it
// for the goroutine that drives libtorch: thread-local state (CUDA-graph capture, the
// autograd engine's caches, OpenMP pools) then stays on one thread.
func Pinned(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("cuda: panic on pinned thread: %v", r)
			}
		}()
		done <- f()
	}()
	return <-done
}
