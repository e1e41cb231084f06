package cuda

import (
	"fmt"
	"unsafe"
)

// Generator is an explicit random stream on one device. Random ops take one, so no op
// draws from libtorch's hidden global state.
type Generator struct {
	h   unsafe.Pointer
	dev Device
}

// NewGenerator returns a generator on dev seeded with seed.
func NewGenerator(seed uint64, dev Device) (*Generator, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	h, err := nativeGeneratorNew(seed, dev)
	if err != nil {
		return nil, err
	}
	return &Generator{h: h, dev: dev}, nil
}

// Device is where g draws.
func (g *Generator) Device() Device { return g.dev }

// Reseed restarts g from seed, in place: its draws are then those of NewGenerator(seed,
// g.Device()). A CUDA graph that reads a registered g follows its new seed at the next
// replay, which is why a run keeps its generators and reseeds them every round.
func (g *Generator) Reseed(seed uint64) error {
	if g == nil || g.h == nil {
		return errorf("generator_set_seed", CodeClosed, "generator is closed")
	}
	return nativeGeneratorSetSeed(g.h, seed)
}

// Close frees g; it is idempotent and nil-safe.
func (g *Generator) Close() error {
	if g != nil && g.h != nil {
		nativeGeneratorFree(g.h)
		g.h = nil
	}
	return nil
}

// CUDADeviceCount is the number of visible CUDA devices (ErrNoCUDA in a CPU build).
func CUDADeviceCount() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	return nativeCUDADeviceCount()
}

// CUDADeviceName is the marketing name of device i, e.g. "NVIDIA H100 80GB HBM3".
func CUDADeviceName(i int) (string, error) {
	if err := Load(); err != nil {
		return "", err
	}
	return nativeCUDADeviceName(i)
}

// CUDAMemInfo reports the free and total bytes of device i (cudaMemGetInfo).
func CUDAMemInfo(i int) (free, total int64, err error) {
	if err := Load(); err != nil {
		return 0, 0, err
	}
	return nativeCUDAMemInfo(i)
}

// CUDAMemoryStats reports the bytes the caching allocator has allocated on device i now
// and at peak; resetPeak starts a new peak after reading.
func CUDAMemoryStats(i int, resetPeak bool) (allocated, peak int64, err error) {
	if err := Load(); err != nil {
		return 0, 0, err
	}
	return nativeCUDAMemoryStats(i, resetPeak)
}

// Synchronize waits for all work on dev; a no-op for the CPU.
func Synchronize(dev Device) error {
	if !dev.IsCUDA() {
		return nil
	}
	if err := Load(); err != nil {
		return err
	}
	return nativeCUDASynchronize(dev.Index)
}

// Stream is a CUDA stream from libtorch's pool. A Scope issues its ops on it after
// SetStream.
type Stream struct {
	h   unsafe.Pointer
	dev Device
}

// NewStream returns a stream on dev (a CUDA device).
func NewStream(dev Device) (*Stream, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if !dev.IsCUDA() {
		return nil, errorf("stream", CodeArgument, "streams need a CUDA device, got %s", dev)
	}
	h, err := nativeStreamNew(dev.Index)
	if err != nil {
		return nil, err
	}
	return &Stream{h: h, dev: dev}, nil
}

// Synchronize waits for the work queued on st.
func (st *Stream) Synchronize() error {
	if st == nil || st.h == nil {
		return errorf("stream_synchronize", CodeClosed, "stream is closed")
	}
	return nativeStreamSynchronize(st.h)
}

// SetCurrentStream makes st the calling OS thread's current stream on CUDA device dev
// (nil: the device's default stream): the ops of scopes without their own stream then run
// on it. It is thread-local, so call it from a locked thread (Pinned) and restore it
// before the thread is released.
func SetCurrentStream(dev Device, st *Stream) error {
	if err := Load(); err != nil {
		return err
	}
	if !dev.IsCUDA() {
		return errorf("cuda_set_current_stream", CodeArgument, "device %s has no streams", dev)
	}
	var h unsafe.Pointer
	if st != nil {
		if st.h == nil {
			return errorf("cuda_set_current_stream", CodeClosed, "stream is closed")
		}
		h = st.h
	}
	return nativeSetCurrentStream(dev.Index, h)
}

// Close releases st (pool streams are reused by libtorch); idempotent and nil-safe.
func (st *Stream) Close() error {
	if st != nil && st.h != nil {
		nativeStreamFree(st.h)
		st.h = nil
	}
	return nil
}

// Graph is a CUDA graph: the ops issued on a stream between CaptureBegin and CaptureEnd,
// replayed with Replay on the same memory (so inputs are refreshed by copying into the
// tensors the capture read, and outputs are read from the tensors it made).
//
// Capture rules (CUDA's): warm the ops up eagerly first; no host synchronization or
// reads of values (Item, ToSlice) during capture; drive it from one pinned goroutine
// (Pinned); scalars passed to ops are baked into the graph.
type Graph struct {
	h         unsafe.Pointer
	capturing bool
	captured  bool
}

// NewGraph returns an empty graph (ErrNoCUDA in a CPU build).
func NewGraph() (*Graph, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	h, err := nativeGraphNew()
	if err != nil {
		return nil, err
	}
	return &Graph{h: h}, nil
}

// CaptureBegin starts recording the work issued on st (not the default stream).
func (g *Graph) CaptureBegin(st *Stream) error {
	switch {
	case g == nil || g.h == nil:
		return errorf("graph_capture_begin", CodeClosed, "graph is closed")
	case st == nil || st.h == nil:
		return errorf("graph_capture_begin", CodeArgument, "need an open stream")
	case g.capturing || g.captured:
		return errorf("graph_capture_begin", CodeArgument, "graph already captured")
	}
	if err := nativeGraphCaptureBegin(g.h, st.h); err != nil {
		return err
	}
	g.capturing = true
	return nil
}

// CaptureBeginSharing is CaptureBegin with the capture's memory drawn from poolOf's private
// pool (poolOf: a graph captured before): graphs that are replayed one after another on one
// stream, never at once, and whose intermediates die with each replay, then share one pool
// instead of holding one footprint each.
func (g *Graph) CaptureBeginSharing(st *Stream, poolOf *Graph) error {
	switch {
	case g == nil || g.h == nil:
		return errorf("graph_capture_begin_shared", CodeClosed, "graph is closed")
	case st == nil || st.h == nil:
		return errorf("graph_capture_begin_shared", CodeArgument, "need an open stream")
	case poolOf == nil || poolOf.h == nil || !poolOf.captured:
		return errorf("graph_capture_begin_shared", CodeArgument, "the graph whose pool is shared must be captured and open")
	case g.capturing || g.captured:
		return errorf("graph_capture_begin_shared", CodeArgument, "graph already captured")
	}
	if err := nativeGraphCaptureBeginShared(g.h, st.h, poolOf.h); err != nil {
		return err
	}
	g.capturing = true
	return nil
}

// Register lets the capture draw from gen (a CUDA generator): at every replay the graph's
// draws follow gen's seed and offset then, and advance gen as the eager ops would. Every
// generator other than the default one that the captured ops use must be registered before
// CaptureBegin; torch before 2.4 cannot (an error).
func (g *Graph) Register(gen *Generator) error {
	switch {
	case g == nil || g.h == nil:
		return errorf("cuda_graph_register_generator", CodeClosed, "graph is closed")
	case gen == nil || gen.h == nil:
		return errorf("cuda_graph_register_generator", CodeClosed, "generator is closed")
	case g.capturing || g.captured:
		return errorf("cuda_graph_register_generator", CodeArgument, "register generators before the capture begins")
	}
	return nativeGraphRegisterGenerator(g.h, gen.h)
}

// CaptureEnd finishes the capture.
func (g *Graph) CaptureEnd() error {
	if g == nil || !g.capturing {
		return errorf("graph_capture_end", CodeArgument, "graph is not capturing")
	}
	g.capturing = false
	if err := nativeGraphCaptureEnd(g.h); err != nil {
		return err
	}
	g.captured = true
	return nil
}

// Replay launches the captured work again (asynchronously, on the capture stream).
func (g *Graph) Replay() error {
	if g == nil || !g.captured {
		return errorf("graph_replay", CodeArgument, "graph was not captured")
	}
	return nativeGraphReplay(g.h)
}

// Close frees g and its private memory pool; idempotent and nil-safe.
func (g *Graph) Close() error {
	if g != nil && g.h != nil {
		nativeGraphFree(g.h)
		g.h = nil
	}
	return nil
}

// String describes g for logs.
func (g *Graph) String() string { return fmt.Sprintf("Graph(captured=%v)", g.captured) }
