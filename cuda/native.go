package cuda

// This is the only file in pfl with import "C". It loads libpfltorch.so with dlopen and
// calls its vtable through static inline trampolines (cgo cannot call C function pointers).
// Everything here speaks C types; the rest of the package speaks Go.

/*
#cgo CFLAGS: -I${SRCDIR}/csrc
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "pfl.h"

static const pfl_api *pfl_load(const char *path, char *err, int errlen) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) { snprintf(err, errlen, "%s", dlerror()); return NULL; }
	pfl_get_api_fn get = (pfl_get_api_fn)dlsym(h, "pfl_get_api");
	if (!get) { snprintf(err, errlen, "no symbol pfl_get_api: %s", dlerror()); return NULL; }
	pfl_status st;
	const pfl_api *api = get(PFL_ABI_MAJOR, &st);
	if (!api) { snprintf(err, errlen, "%s", st.msg); return NULL; }
	if (api->struct_size < sizeof(pfl_api)) {
		snprintf(err, errlen, "library vtable has %u bytes, this binary needs %zu: rebuild the library",
			api->struct_size, sizeof(pfl_api));
		return NULL;
	}
	return api;
}

static int32_t t_set_matmul_precision(const pfl_api *a, const char *p, pfl_status *st) { return a->set_matmul_precision(p, st); }
static int32_t t_caps(const pfl_api *a, pfl_caps *c, pfl_status *st) { return a->caps(c, st); }
static int64_t t_live_tensors(const pfl_api *a) { return a->live_tensors(); }
static int64_t t_live_generators(const pfl_api *a) { return a->live_generators(); }
static void t_host_cache_release(const pfl_api *a) { a->host_cache_release(); }
static int32_t t_host_cache_stats(const pfl_api *a, int64_t *out) { return a->host_cache_stats(out); }
static void t_thread_state(const pfl_api *a, int32_t *out) { a->thread_state(out); }
static int32_t t_host_cache_small_stats(const pfl_api *a, int64_t *out) { return a->host_cache_small_stats(out); }
static void t_host_cache_reset_peak(const pfl_api *a) { a->host_cache_reset_peak(); }
static int32_t t_set_num_threads(const pfl_api *a, int32_t n, pfl_status *st) { return a->set_num_threads(n, st); }
static int32_t t_from_data(const pfl_api *a, const void *d, int32_t dt, const int64_t *dims, int32_t nd,
	int32_t devt, int32_t devi, pfl_tensor *out, pfl_meta *m, pfl_status *st) {
	return a->tensor_from_data(d, dt, dims, nd, devt, devi, out, m, st);
}
static int32_t t_to_host(const pfl_api *a, pfl_tensor t, int32_t dt, void *dst, int64_t n, pfl_status *st) {
	return a->tensor_to_host(t, dt, dst, n, st);
}
static int32_t t_meta(const pfl_api *a, pfl_tensor t, pfl_meta *m, pfl_status *st) { return a->tensor_meta(t, m, st); }
static void t_free(const pfl_api *a, pfl_tensor t) { a->tensor_free(t); }
static void t_free_many(const pfl_api *a, const pfl_tensor *ts, int64_t n) { a->tensor_free_many(ts, n); }
static int32_t t_op(const pfl_api *a, const pfl_ctx *ctx, int32_t op, const pfl_tensor *in, int32_t nin,
	const int64_t *ints, int32_t nints, const double *dbls, int32_t ndbls, pfl_generator g,
	pfl_tensor *out, pfl_meta *m, int32_t nout, pfl_status *st) {
	return a->op(ctx, op, in, nin, ints, nints, dbls, ndbls, g, out, m, nout, st);
}
static int32_t t_set_requires_grad(const pfl_api *a, pfl_tensor t, int32_t f, pfl_status *st) {
	return a->set_requires_grad(t, f, st);
}
static int32_t t_grad_of(const pfl_api *a, pfl_tensor t, pfl_tensor *out, pfl_meta *m, pfl_status *st) {
	return a->grad_of(t, out, m, st);
}
static int32_t t_zero_grad(const pfl_api *a, const pfl_tensor *ts, int64_t n, int32_t none, pfl_status *st) {
	return a->zero_grad(ts, n, none, st);
}
static int32_t t_backward(const pfl_api *a, const pfl_ctx *ctx, const pfl_tensor *o, const pfl_tensor *g,
	int32_t n, int32_t retain, pfl_status *st) {
	return a->backward(ctx, o, g, n, retain, st);
}
static int32_t t_grad(const pfl_api *a, const pfl_ctx *ctx, const pfl_tensor *o, const pfl_tensor *g, int32_t no,
	const pfl_tensor *in, int32_t ni, int32_t retain, int32_t create, int32_t unused,
	pfl_tensor *out, pfl_meta *m, pfl_status *st) {
	return a->grad(ctx, o, g, no, in, ni, retain, create, unused, out, m, st);
}
static int32_t t_gen_new(const pfl_api *a, uint64_t seed, int32_t dt, int32_t di, pfl_generator *out, pfl_status *st) {
	return a->generator_new(seed, dt, di, out, st);
}
static void t_gen_free(const pfl_api *a, pfl_generator g) { a->generator_free(g); }
static int32_t t_cuda_count(const pfl_api *a, int32_t *n, pfl_status *st) { return a->cuda_device_count(n, st); }
static int32_t t_cuda_name(const pfl_api *a, int32_t d, char *b, int32_t l, pfl_status *st) {
	return a->cuda_device_name(d, b, l, st);
}
static int32_t t_cuda_mem(const pfl_api *a, int32_t d, int64_t *f, int64_t *t, pfl_status *st) {
	return a->cuda_mem_info(d, f, t, st);
}
static int32_t t_cuda_stats(const pfl_api *a, int32_t d, int64_t *al, int64_t *pk, int32_t r, pfl_status *st) {
	return a->cuda_memory_stats(d, al, pk, r, st);
}
static int32_t t_cuda_sync(const pfl_api *a, int32_t d, pfl_status *st) { return a->cuda_synchronize(d, st); }
static int32_t t_stream_new(const pfl_api *a, int32_t d, pfl_stream *out, pfl_status *st) {
	return a->cuda_stream_new(d, out, st);
}
static int32_t t_stream_sync(const pfl_api *a, pfl_stream s, pfl_status *st) { return a->cuda_stream_synchronize(s, st); }
static void t_stream_free(const pfl_api *a, pfl_stream s) { a->cuda_stream_free(s); }
static int32_t t_graph_new(const pfl_api *a, pfl_graph *out, pfl_status *st) { return a->cuda_graph_new(out, st); }
static int32_t t_graph_begin(const pfl_api *a, pfl_graph g, pfl_stream s, pfl_status *st) {
	return a->cuda_graph_capture_begin(g, s, st);
}
static int32_t t_graph_end(const pfl_api *a, pfl_graph g, pfl_status *st) { return a->cuda_graph_capture_end(g, st); }
static int32_t t_graph_replay(const pfl_api *a, pfl_graph g, pfl_status *st) { return a->cuda_graph_replay(g, st); }
static void t_graph_free(const pfl_api *a, pfl_graph g) { a->cuda_graph_free(g); }
static int32_t t_gen_set_seed(const pfl_api *a, pfl_generator g, uint64_t seed, pfl_status *st) {
	return a->generator_set_seed(g, seed, st);
}
static int32_t t_graph_register(const pfl_api *a, pfl_graph g, pfl_generator gen, pfl_status *st) {
	return a->cuda_graph_register_generator(g, gen, st);
}
static int32_t t_set_stream(const pfl_api *a, int32_t d, pfl_stream s, pfl_status *st) {
	return a->cuda_set_current_stream(d, s, st);
}
static int32_t t_graph_begin_shared(const pfl_api *a, pfl_graph g, pfl_stream s, pfl_graph pool, pfl_status *st) {
	return a->cuda_graph_capture_begin_shared(g, s, pool, st);
}
static int32_t t_pg_new_on(const pfl_api *a, const char *host, int32_t port, int32_t rank, int32_t world,
	int64_t timeout_ms, int32_t dt, int32_t di, const char *ifaces, const char *local, pfl_pg *out, pfl_status *st) {
	return a->pg_new_on(host, port, rank, world, timeout_ms, dt, di, ifaces, local, out, st);
}
static int32_t t_pg_all_reduce(const pfl_api *a, pfl_pg pg, const pfl_tensor *ts, int32_t n, pfl_status *st) {
	return a->pg_all_reduce(pg, ts, n, st);
}
static int32_t t_pg_broadcast(const pfl_api *a, pfl_pg pg, const pfl_tensor *ts, int32_t n, int32_t root, pfl_status *st) {
	return a->pg_broadcast(pg, ts, n, root, st);
}
static int32_t t_pg_all_gather(const pfl_api *a, pfl_pg pg, pfl_tensor out, pfl_tensor in, pfl_status *st) {
	return a->pg_all_gather(pg, out, in, st);
}
static int32_t t_pg_barrier(const pfl_api *a, pfl_pg pg, pfl_status *st) { return a->pg_barrier(pg, st); }
static void t_pg_free(const pfl_api *a, pfl_pg pg) { a->pg_free(pg); }
*/
import "C"

import (
	"unsafe"
)

// api is the loaded vtable; nil until load succeeds.
var api *C.pfl_api

// maxDims mirrors PFL_MAX_DIMS.
const maxDims = C.PFL_MAX_DIMS

// nativeOpen loads the library at path and returns a description of why it failed.
func nativeOpen(path string) string {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [1024]C.char
	a := C.pfl_load(cpath, &buf[0], C.int(len(buf)))
	if a == nil {
		return C.GoString(&buf[0])
	}
	api = a
	return ""
}

// status converts a failed call's status into an *Error; op names the Go-level operation.
func status(op string, rc C.int32_t, st *C.pfl_status) error {
	if rc == 0 {
		return nil
	}
	return &Error{Op: op, Code: Code(rc), Msg: C.GoString(&st.msg[0])}
}

func metaFrom(m *C.pfl_meta) meta {
	n := int(m.ndim)
	shape := make([]int64, n)
	for i := 0; i < n; i++ {
		shape[i] = int64(m.dims[i])
	}
	dev := Device{Type: DeviceType(m.device_type), Index: int(m.device_index)}
	return meta{dtype: DType(m.dtype), device: dev, shape: shape, requiresGrad: m.requires_grad != 0}
}

func nativeCaps() (C.pfl_caps, error) {
	var c C.pfl_caps
	var st C.pfl_status
	return c, status("caps", C.t_caps(api, &c, &st), &st)
}

func capsToInfo(c C.pfl_caps) Info {
	return Info{
		TorchVersion:  C.GoString(&c.torch_version[0]),
		ABIMajor:      int(c.abi_major),
		ABIMinor:      int(c.abi_minor),
		HasCUDA:       c.has_cuda != 0,
		CUDAAvailable: c.cuda_available != 0,
		HasBF16:       c.has_bf16 != 0,
		HasSDPA:       c.has_sdpa != 0,
		HasCUDAGraphs: c.has_cuda_graphs != 0,
		CXX11ABI:      c.cxx11_abi != 0,
		NumThreads:    int(c.num_threads),
		CUDAVersion:   int(c.cuda_version),
	}
}

func nativeLiveTensors() int64    { return int64(C.t_live_tensors(api)) }
func nativeLiveGenerators() int64 { return int64(C.t_live_generators(api)) }

func nativeHostCacheRelease() { C.t_host_cache_release(api) }

func nativeHostCacheResetPeak() { C.t_host_cache_reset_peak(api) }

func nativeHostCacheStats() (HostCacheStats, bool) {
	var out [4]C.int64_t
	if C.t_host_cache_stats(api, &out[0]) == 0 {
		return HostCacheStats{}, false
	}
	st := HostCacheStats{IdleBytes: int64(out[0]), LiveBytes: int64(out[1]), Hits: int64(out[2]), Misses: int64(out[3])}
	var small [3]C.int64_t
	if C.t_host_cache_small_stats(api, &small[0]) != 0 {
		st.SmallBytes, st.HeapFreeBytes, st.PeakBytes = int64(small[0]), int64(small[1]), int64(small[2])
	}
	return st, true
}

func nativeThreadState() ThreadState {
	var out [4]C.int32_t
	C.t_thread_state(api, &out[0])
	return ThreadState{OpenMP: int(out[0]), Torch: int(out[1]), BLAS: int(out[2]), BLASBuild: BLASBuild(out[3])}
}

func nativeSetNumThreads(n int) error {
	var st C.pfl_status
	return status("set_num_threads", C.t_set_num_threads(api, C.int32_t(n), &st), &st)
}

func nativeSetMatmulPrecision(p string) error {
	cs := C.CString(p)
	defer C.free(unsafe.Pointer(cs))
	var st C.pfl_status
	return status("set_matmul_precision", C.t_set_matmul_precision(api, cs, &st), &st)
}

func nativeFromData(data unsafe.Pointer, dt DType, shape []int64, dev Device) (unsafe.Pointer, meta, error) {
	var dims [maxDims]C.int64_t
	for i, d := range shape {
		dims[i] = C.int64_t(d)
	}
	var out C.pfl_tensor
	var m C.pfl_meta
	var st C.pfl_status
	rc := C.t_from_data(api, data, C.int32_t(dt), &dims[0], C.int32_t(len(shape)),
		C.int32_t(dev.Type), C.int32_t(dev.Index), &out, &m, &st)
	if err := status("from_data", rc, &st); err != nil {
		return nil, meta{}, err
	}
	return unsafe.Pointer(out), metaFrom(&m), nil
}

func nativeToHost(h unsafe.Pointer, dt DType, dst unsafe.Pointer, nbytes int64) error {
	var st C.pfl_status
	rc := C.t_to_host(api, C.pfl_tensor(h), C.int32_t(dt), dst, C.int64_t(nbytes), &st)
	return status("to_host", rc, &st)
}

func nativeMeta(h unsafe.Pointer) (meta, error) {
	var m C.pfl_meta
	var st C.pfl_status
	if err := status("meta", C.t_meta(api, C.pfl_tensor(h), &m, &st), &st); err != nil {
		return meta{}, err
	}
	return metaFrom(&m), nil
}

func nativeFree(h unsafe.Pointer) { C.t_free(api, C.pfl_tensor(h)) }

// nativeFreeMany frees hs in one call.
func nativeFreeMany(hs []unsafe.Pointer) {
	if len(hs) == 0 {
		return
	}
	C.t_free_many(api, (*C.pfl_tensor)(unsafe.Pointer(&hs[0])), C.int64_t(len(hs)))
}

// call is the reusable argument block of one Scope: ops fill it and run it, so a call
// allocates nothing on the Go heap beyond its results.
type call struct {
	ctx  C.pfl_ctx
	in   []C.pfl_tensor
	ints []C.int64_t
	dbls []C.double
	out  []C.pfl_tensor
	meta []C.pfl_meta
	st   C.pfl_status
}

func newCall() *call { return &call{ctx: C.pfl_ctx{grad_enabled: 1, autocast: -1}} }

func (c *call) setMode(grad bool, autocast DType, stream unsafe.Pointer) {
	c.ctx.grad_enabled = 0
	if grad {
		c.ctx.grad_enabled = 1
	}
	c.ctx.autocast = C.int32_t(autocast)
	c.ctx.stream = C.pfl_stream(stream)
}

func (c *call) reset() {
	c.in, c.ints, c.dbls = c.in[:0], c.ints[:0], c.dbls[:0]
}

func (c *call) addIn(h unsafe.Pointer)         { c.in = append(c.in, C.pfl_tensor(h)) }
func (c *call) addInt(v int64)                 { c.ints = append(c.ints, C.int64_t(v)) }
func (c *call) addDbl(v float64)               { c.dbls = append(c.dbls, C.double(v)) }
func (c *call) handleOut(i int) unsafe.Pointer { return unsafe.Pointer(c.out[i]) }
func (c *call) metaOut(i int) meta             { return metaFrom(&c.meta[i]) }

func (c *call) ensureOut(n int) {
	if cap(c.out) < n {
		c.out = make([]C.pfl_tensor, n)
		c.meta = make([]C.pfl_meta, n)
	}
	c.out, c.meta = c.out[:n], c.meta[:n]
}

// run executes op with the filled arguments and room for nOut results.
func (c *call) run(name string, op int32, gen unsafe.Pointer, nOut int) error {
	c.ensureOut(nOut)
	var in *C.pfl_tensor
	if len(c.in) > 0 {
		in = &c.in[0]
	}
	var ints *C.int64_t
	if len(c.ints) > 0 {
		ints = &c.ints[0]
	}
	var dbls *C.double
	if len(c.dbls) > 0 {
		dbls = &c.dbls[0]
	}
	var out *C.pfl_tensor
	var m *C.pfl_meta
	if nOut > 0 {
		out, m = &c.out[0], &c.meta[0]
	}
	rc := C.t_op(api, &c.ctx, C.int32_t(op), in, C.int32_t(len(c.in)), ints, C.int32_t(len(c.ints)),
		dbls, C.int32_t(len(c.dbls)), C.pfl_generator(gen), out, m, C.int32_t(nOut), &c.st)
	return status(name, rc, &c.st)
}

// backward runs the filled inputs as [outs..., gradOuts...] (gradOuts may be absent).
func (c *call) backward(nOuts int, withGrads bool, retain bool) error {
	var g *C.pfl_tensor
	if withGrads {
		g = &c.in[nOuts]
	}
	rc := C.t_backward(api, &c.ctx, &c.in[0], g, C.int32_t(nOuts), cBool(retain), &c.st)
	return status("backward", rc, &c.st)
}

// grad runs the filled inputs as [outs..., gradOuts..., inputs...].
func (c *call) grad(nOuts, nInputs int, withGrads, retain, create, allowUnused bool) error {
	c.ensureOut(nInputs)
	var g *C.pfl_tensor
	if withGrads {
		g = &c.in[nOuts]
	}
	first := nOuts
	if withGrads {
		first += nOuts
	}
	rc := C.t_grad(api, &c.ctx, &c.in[0], g, C.int32_t(nOuts), &c.in[first], C.int32_t(nInputs),
		cBool(retain), cBool(create), cBool(allowUnused), &c.out[0], &c.meta[0], &c.st)
	return status("grad", rc, &c.st)
}

func cBool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

func nativeSetRequiresGrad(h unsafe.Pointer, flag bool) error {
	var st C.pfl_status
	return status("set_requires_grad", C.t_set_requires_grad(api, C.pfl_tensor(h), cBool(flag), &st), &st)
}

func nativeGradOf(h unsafe.Pointer) (unsafe.Pointer, meta, error) {
	var out C.pfl_tensor
	var m C.pfl_meta
	var st C.pfl_status
	if err := status("grad_of", C.t_grad_of(api, C.pfl_tensor(h), &out, &m, &st), &st); err != nil || out == nil {
		return nil, meta{}, err
	}
	return unsafe.Pointer(out), metaFrom(&m), nil
}

func nativeZeroGrad(hs []unsafe.Pointer, setToNone bool) error {
	if len(hs) == 0 {
		return nil
	}
	var st C.pfl_status
	rc := C.t_zero_grad(api, (*C.pfl_tensor)(unsafe.Pointer(&hs[0])), C.int64_t(len(hs)), cBool(setToNone), &st)
	return status("zero_grad", rc, &st)
}

func nativeGeneratorNew(seed uint64, dev Device) (unsafe.Pointer, error) {
	var out C.pfl_generator
	var st C.pfl_status
	rc := C.t_gen_new(api, C.uint64_t(seed), C.int32_t(dev.Type), C.int32_t(dev.Index), &out, &st)
	return unsafe.Pointer(out), status("generator", rc, &st)
}

func nativeGeneratorSetSeed(h unsafe.Pointer, seed uint64) error {
	var st C.pfl_status
	return status("generator_set_seed", C.t_gen_set_seed(api, C.pfl_generator(h), C.uint64_t(seed), &st), &st)
}

func nativeGeneratorFree(h unsafe.Pointer) { C.t_gen_free(api, C.pfl_generator(h)) }

func nativeCUDADeviceCount() (int, error) {
	var n C.int32_t
	var st C.pfl_status
	return int(n), status("cuda_device_count", C.t_cuda_count(api, &n, &st), &st)
}

func nativeCUDADeviceName(d int) (string, error) {
	var buf [256]C.char
	var st C.pfl_status
	if err := status("cuda_device_name", C.t_cuda_name(api, C.int32_t(d), &buf[0], C.int32_t(len(buf)), &st), &st); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

func nativeCUDAMemInfo(d int) (free, total int64, err error) {
	var f, t C.int64_t
	var st C.pfl_status
	err = status("cuda_mem_info", C.t_cuda_mem(api, C.int32_t(d), &f, &t, &st), &st)
	return int64(f), int64(t), err
}

func nativeCUDAMemoryStats(d int, reset bool) (alloc, peak int64, err error) {
	var a, p C.int64_t
	var st C.pfl_status
	err = status("cuda_memory_stats", C.t_cuda_stats(api, C.int32_t(d), &a, &p, cBool(reset), &st), &st)
	return int64(a), int64(p), err
}

func nativeCUDASynchronize(d int) error {
	var st C.pfl_status
	return status("cuda_synchronize", C.t_cuda_sync(api, C.int32_t(d), &st), &st)
}

func nativeStreamNew(d int) (unsafe.Pointer, error) {
	var out C.pfl_stream
	var st C.pfl_status
	return unsafe.Pointer(out), status("cuda_stream_new", C.t_stream_new(api, C.int32_t(d), &out, &st), &st)
}

func nativeStreamSynchronize(h unsafe.Pointer) error {
	var st C.pfl_status
	return status("cuda_stream_synchronize", C.t_stream_sync(api, C.pfl_stream(h), &st), &st)
}

func nativeStreamFree(h unsafe.Pointer) { C.t_stream_free(api, C.pfl_stream(h)) }

func nativeGraphNew() (unsafe.Pointer, error) {
	var out C.pfl_graph
	var st C.pfl_status
	return unsafe.Pointer(out), status("cuda_graph_new", C.t_graph_new(api, &out, &st), &st)
}

func nativeGraphCaptureBegin(g, s unsafe.Pointer) error {
	var st C.pfl_status
	return status("cuda_graph_capture_begin", C.t_graph_begin(api, C.pfl_graph(g), C.pfl_stream(s), &st), &st)
}

func nativeGraphCaptureEnd(g unsafe.Pointer) error {
	var st C.pfl_status
	return status("cuda_graph_capture_end", C.t_graph_end(api, C.pfl_graph(g), &st), &st)
}

func nativeGraphReplay(g unsafe.Pointer) error {
	var st C.pfl_status
	return status("cuda_graph_replay", C.t_graph_replay(api, C.pfl_graph(g), &st), &st)
}

func nativeGraphRegisterGenerator(g, gen unsafe.Pointer) error {
	var st C.pfl_status
	return status("cuda_graph_register_generator", C.t_graph_register(api, C.pfl_graph(g), C.pfl_generator(gen), &st), &st)
}

func nativeGraphCaptureBeginShared(g, s, pool unsafe.Pointer) error {
	var st C.pfl_status
	return status("cuda_graph_capture_begin_shared", C.t_graph_begin_shared(api, C.pfl_graph(g), C.pfl_stream(s), C.pfl_graph(pool), &st), &st)
}

func nativeSetCurrentStream(d int, s unsafe.Pointer) error {
	var st C.pfl_status
	return status("cuda_set_current_stream", C.t_set_stream(api, C.int32_t(d), C.pfl_stream(s), &st), &st)
}

func nativeGraphFree(g unsafe.Pointer) { C.t_graph_free(api, C.pfl_graph(g)) }

// Op codes, taken from enum pfl_op so they cannot drift from the header.
const (
	opZeros              int32 = C.PFL_OP_ZEROS
	opOnes               int32 = C.PFL_OP_ONES
	opFull               int32 = C.PFL_OP_FULL
	opArange             int32 = C.PFL_OP_ARANGE
	opRand               int32 = C.PFL_OP_RAND
	opRandn              int32 = C.PFL_OP_RANDN
	opRandint            int32 = C.PFL_OP_RANDINT
	opRandperm           int32 = C.PFL_OP_RANDPERM
	opUniform            int32 = C.PFL_OP_UNIFORM_
	opNormal             int32 = C.PFL_OP_NORMAL_
	opTo                 int32 = C.PFL_OP_TO
	opClone              int32 = C.PFL_OP_CLONE
	opDetach             int32 = C.PFL_OP_DETACH
	opContiguous         int32 = C.PFL_OP_CONTIGUOUS
	opCopy               int32 = C.PFL_OP_COPY_
	opReshape            int32 = C.PFL_OP_RESHAPE
	opView               int32 = C.PFL_OP_VIEW
	opPermute            int32 = C.PFL_OP_PERMUTE
	opTranspose          int32 = C.PFL_OP_TRANSPOSE
	opExpand             int32 = C.PFL_OP_EXPAND
	opSqueeze            int32 = C.PFL_OP_SQUEEZE
	opUnsqueeze          int32 = C.PFL_OP_UNSQUEEZE
	opCat                int32 = C.PFL_OP_CAT
	opStack              int32 = C.PFL_OP_STACK
	opNarrow             int32 = C.PFL_OP_NARROW
	opSlice              int32 = C.PFL_OP_SLICE
	opSelect             int32 = C.PFL_OP_SELECT
	opIndexSelect        int32 = C.PFL_OP_INDEX_SELECT
	opGather             int32 = C.PFL_OP_GATHER
	opScatterAdd         int32 = C.PFL_OP_SCATTER_ADD
	opSplit              int32 = C.PFL_OP_SPLIT
	opFlatten            int32 = C.PFL_OP_FLATTEN
	opRepeat             int32 = C.PFL_OP_REPEAT
	opAdd                int32 = C.PFL_OP_ADD
	opSub                int32 = C.PFL_OP_SUB
	opMul                int32 = C.PFL_OP_MUL
	opDiv                int32 = C.PFL_OP_DIV
	opAddScalar          int32 = C.PFL_OP_ADD_SCALAR
	opMulScalar          int32 = C.PFL_OP_MUL_SCALAR
	opDivScalar          int32 = C.PFL_OP_DIV_SCALAR
	opPowScalar          int32 = C.PFL_OP_POW_SCALAR
	opNeg                int32 = C.PFL_OP_NEG
	opExp                int32 = C.PFL_OP_EXP
	opLog                int32 = C.PFL_OP_LOG
	opAbs                int32 = C.PFL_OP_ABS
	opSqrt               int32 = C.PFL_OP_SQRT
	opClamp              int32 = C.PFL_OP_CLAMP
	opWhere              int32 = C.PFL_OP_WHERE
	opEq                 int32 = C.PFL_OP_EQ
	opLt                 int32 = C.PFL_OP_LT
	opGt                 int32 = C.PFL_OP_GT
	opMaskedFill         int32 = C.PFL_OP_MASKED_FILL
	opMatmul             int32 = C.PFL_OP_MATMUL
	opBmm                int32 = C.PFL_OP_BMM
	opBaddbmm            int32 = C.PFL_OP_BADDBMM
	opLinear             int32 = C.PFL_OP_LINEAR
	opCdist              int32 = C.PFL_OP_CDIST
	opConv2d             int32 = C.PFL_OP_CONV2D
	opMaxPool2d          int32 = C.PFL_OP_MAX_POOL2D
	opAvgPool2d          int32 = C.PFL_OP_AVG_POOL2D
	opAdaptiveAvg        int32 = C.PFL_OP_ADAPTIVE_AVG_POOL2D
	opLayerNorm          int32 = C.PFL_OP_LAYER_NORM
	opBatchNorm          int32 = C.PFL_OP_BATCH_NORM
	opSoftmax            int32 = C.PFL_OP_SOFTMAX
	opLogSoftmax         int32 = C.PFL_OP_LOG_SOFTMAX
	opGelu               int32 = C.PFL_OP_GELU
	opRelu               int32 = C.PFL_OP_RELU
	opTanh               int32 = C.PFL_OP_TANH
	opSigmoid            int32 = C.PFL_OP_SIGMOID
	opDropout            int32 = C.PFL_OP_DROPOUT
	opCrossEnt           int32 = C.PFL_OP_CROSS_ENTROPY
	opEmbedding          int32 = C.PFL_OP_EMBEDDING
	opSDPA               int32 = C.PFL_OP_SDPA
	opSum                int32 = C.PFL_OP_SUM
	opMean               int32 = C.PFL_OP_MEAN
	opAmax               int32 = C.PFL_OP_AMAX
	opArgmax             int32 = C.PFL_OP_ARGMAX
	opTopk               int32 = C.PFL_OP_TOPK
	opForeachAdd         int32 = C.PFL_OP_FOREACH_ADD_
	opForeachAddScalar   int32 = C.PFL_OP_FOREACH_ADD_SCALAR_
	opForeachMulScalar   int32 = C.PFL_OP_FOREACH_MUL_SCALAR_
	opForeachMul         int32 = C.PFL_OP_FOREACH_MUL_
	opForeachAddcmul     int32 = C.PFL_OP_FOREACH_ADDCMUL_
	opForeachAddcdiv     int32 = C.PFL_OP_FOREACH_ADDCDIV_
	opForeachZero        int32 = C.PFL_OP_FOREACH_ZERO_
	opForeachCopy        int32 = C.PFL_OP_FOREACH_COPY_
	opForeachSqrt        int32 = C.PFL_OP_FOREACH_SQRT
	opForeachLerp        int32 = C.PFL_OP_FOREACH_LERP_
	opIndexCopy          int32 = C.PFL_OP_INDEX_COPY_
	opForeachWeightedSum int32 = C.PFL_OP_FOREACH_WEIGHTED_SUM_
	opKernelImageBatch   int32 = C.PFL_OP_KERNEL_IMAGE_BATCH
	opKernelWeightedSum  int32 = C.PFL_OP_KERNEL_WEIGHTED_SUM_
)

func nativePGNew(host string, port, rank, world int, timeoutMS int64, dev Device, ifaces, local string) (unsafe.Pointer, error) {
	ch := C.CString(host)
	defer C.free(unsafe.Pointer(ch))
	ci := C.CString(ifaces)
	defer C.free(unsafe.Pointer(ci))
	cl := C.CString(local)
	defer C.free(unsafe.Pointer(cl))
	var out C.pfl_pg
	var st C.pfl_status
	rc := C.t_pg_new_on(api, ch, C.int32_t(port), C.int32_t(rank), C.int32_t(world), C.int64_t(timeoutMS),
		C.int32_t(dev.Type), C.int32_t(dev.Index), ci, cl, &out, &st)
	if err := status("process_group", rc, &st); err != nil {
		return nil, err
	}
	return unsafe.Pointer(out), nil
}

func nativePGAllReduce(pg unsafe.Pointer, hs []unsafe.Pointer) error {
	var st C.pfl_status
	var p *C.pfl_tensor
	if len(hs) > 0 {
		p = (*C.pfl_tensor)(unsafe.Pointer(&hs[0]))
	}
	return status("all_reduce", C.t_pg_all_reduce(api, C.pfl_pg(pg), p, C.int32_t(len(hs)), &st), &st)
}

func nativePGBroadcast(pg unsafe.Pointer, hs []unsafe.Pointer, root int) error {
	var st C.pfl_status
	var p *C.pfl_tensor
	if len(hs) > 0 {
		p = (*C.pfl_tensor)(unsafe.Pointer(&hs[0]))
	}
	return status("broadcast", C.t_pg_broadcast(api, C.pfl_pg(pg), p, C.int32_t(len(hs)), C.int32_t(root), &st), &st)
}

func nativePGAllGather(pg, out, in unsafe.Pointer) error {
	var st C.pfl_status
	return status("all_gather", C.t_pg_all_gather(api, C.pfl_pg(pg), C.pfl_tensor(out), C.pfl_tensor(in), &st), &st)
}

func nativePGBarrier(pg unsafe.Pointer) error {
	var st C.pfl_status
	return status("barrier", C.t_pg_barrier(api, C.pfl_pg(pg), &st), &st)
}

func nativePGFree(pg unsafe.Pointer) { C.t_pg_free(api, C.pfl_pg(pg)) }
