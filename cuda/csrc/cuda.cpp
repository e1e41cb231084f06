// cuda.cpp: devices, memory, streams and CUDA graphs. Compiled with PFL_WITH_CUDA=1 only
// when CMake finds libtorch_cuda; otherwise every entry point reports PFL_ERR_NO_CUDA.
#include "internal.h"

#if PFL_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>

#include <type_traits>
#include <utility>

// Declared by CUDAGraph.h from torch 2.4 on; declared here too so that the detection below
// compiles against older headers, where it names a type nothing defines.
namespace at {
struct CUDAGeneratorState;
}

struct pfl_stream_s {
  c10::cuda::CUDAStream s;
};
struct pfl_graph_s {
  at::cuda::CUDAGraph g;
  c10::optional<c10::cuda::CUDAStream> stream;  // the capture stream, set by capture_begin
};
#else
struct pfl_stream_s {};
struct pfl_graph_s {};
#endif

namespace pfl {

#if PFL_WITH_CUDA
void *stream_guard_new(pfl_stream s) { return new c10::cuda::CUDAStreamGuard(s->s); }
void stream_guard_free(void *g) { delete static_cast<c10::cuda::CUDAStreamGuard *>(g); }
void fill_cuda_caps(pfl_caps *c) {
  c->has_cuda = 1;
  c->has_cuda_graphs = 1;
  c->cuda_available = torch::cuda::is_available() ? 1 : 0;
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) c->cuda_version = v;
}
// CUDAGraph's ways of reading a custom generator differ across torch 2.x, and which one a
// torch has is detected from its CUDAGraph rather than from its version number (the
// versions between the ones checked differ in ways no number here would know):
//   - register_generator_state(const Generator&): the graph reads that generator's state
//     (torch 2.4 until its removal; 2.6 and 2.11 have it);
//   - only register_generator_state(intrusive_ptr<CUDAGeneratorState>) (torch 2.14): a
//     capture registers each generator's state itself on the generator's first draw
//     inside it, so there is nothing to do;
//   - neither (torch before 2.4): a graph reads only the default generator.
template <typename Graph, typename = void>
struct takes_generator : std::false_type {};
template <typename Graph>
struct takes_generator<Graph, std::void_t<decltype(std::declval<Graph &>().register_generator_state(
                                  std::declval<const at::Generator &>()))>> : std::true_type {};
template <typename Graph, typename = void>
struct takes_generator_state : std::false_type {};
template <typename Graph>
struct takes_generator_state<
    Graph, std::void_t<decltype(std::declval<Graph &>().register_generator_state(
               std::declval<c10::intrusive_ptr<at::CUDAGeneratorState>>()))>> : std::true_type {};

// register_generator makes graph's captures read gen (see above); a template, so that only
// the branch this torch has is compiled.
template <typename Graph>
void register_generator(Graph &graph, const at::Generator &gen) {
  if constexpr (takes_generator<Graph>::value) {
    graph.register_generator_state(gen);
  } else if constexpr (!takes_generator_state<Graph>::value) {
    throw ArgError(std::string("this torch's CUDA graphs read only the default generator (no "
                               "CUDAGraph::register_generator_state; torch ") +
                   TORCH_VERSION + ")");
  }
}

static void check_device(int32_t d) {
  int64_t n = c10::cuda::device_count();
  if (d < 0 || d >= n)
    throw ArgError("CUDA device " + std::to_string(d) + " out of range (" + std::to_string(n) +
                   " devices)");
}
#else
void *stream_guard_new(pfl_stream) { throw NoCudaError(); }
void stream_guard_free(void *) {}
void fill_cuda_caps(pfl_caps *) {}
#endif

}  // namespace pfl

using namespace pfl;

extern "C" {

#if PFL_WITH_CUDA

int32_t pfl_cuda_device_count(int32_t *out, pfl_status *st) {
  PFL_TRY
  *out = static_cast<int32_t>(c10::cuda::device_count());
  PFL_CATCH(st, "cuda_device_count")
}

int32_t pfl_cuda_device_name(int32_t d, char *buf, int32_t len, pfl_status *st) {
  PFL_TRY
  check_device(d);
  cudaDeviceProp *p = at::cuda::getDeviceProperties(d);
  std::snprintf(buf, len, "%s", p->name);
  PFL_CATCH(st, "cuda_device_name")
}

int32_t pfl_cuda_mem_info(int32_t d, int64_t *free_b, int64_t *total_b, pfl_status *st) {
  PFL_TRY
  check_device(d);
  c10::cuda::CUDAGuard g(static_cast<c10::DeviceIndex>(d));
  size_t f = 0, t = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&f, &t));
  *free_b = static_cast<int64_t>(f);
  *total_b = static_cast<int64_t>(t);
  PFL_CATCH(st, "cuda_mem_info")
}

int32_t pfl_cuda_memory_stats(int32_t d, int64_t *allocated, int64_t *peak, int32_t reset,
                              pfl_status *st) {
  PFL_TRY
  check_device(d);
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(d);
  // Index 0 is StatType::AGGREGATE in every version; the enum's namespace moved in 2.x.
  const auto &agg = stats.allocated_bytes[0];
  *allocated = agg.current;
  *peak = agg.peak;
  if (reset) c10::cuda::CUDACachingAllocator::resetPeakStats(d);
  PFL_CATCH(st, "cuda_memory_stats")
}

int32_t pfl_cuda_synchronize(int32_t d, pfl_status *st) {
  PFL_TRY
  check_device(d);
  c10::cuda::CUDAGuard g(static_cast<c10::DeviceIndex>(d));
  C10_CUDA_CHECK(cudaDeviceSynchronize());
  PFL_CATCH(st, "cuda_synchronize")
}

int32_t pfl_cuda_stream_new(int32_t d, pfl_stream *out, pfl_status *st) {
  PFL_TRY
  check_device(d);
  *out = new pfl_stream_s{c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(d))};
  PFL_CATCH(st, "cuda_stream_new")
}

int32_t pfl_cuda_stream_synchronize(pfl_stream s, pfl_status *st) {
  PFL_TRY
  if (!s) throw ArgError("null stream");
  s->s.synchronize();
  PFL_CATCH(st, "cuda_stream_synchronize")
}

void pfl_cuda_stream_free(pfl_stream s) { delete s; }

int32_t pfl_cuda_graph_new(pfl_graph *out, pfl_status *st) {
  PFL_TRY
  *out = new pfl_graph_s();
  PFL_CATCH(st, "cuda_graph_new")
}

int32_t pfl_cuda_graph_capture_begin(pfl_graph g, pfl_stream s, pfl_status *st) {
  PFL_TRY
  if (!g || !s) throw ArgError("null graph or stream");
  // As torch.cuda.graph does: finish the queued work and hand the blocks the caching
  // allocator holds back to the device, so that the capture's private pool can take the
  // memory the eager warm-up step held (a large step would not fit twice).
  C10_CUDA_CHECK(cudaDeviceSynchronize());
  c10::cuda::CUDACachingAllocator::emptyCache();
  c10::cuda::CUDAStreamGuard guard(s->s);
  g->stream = s->s;
  g->g.capture_begin();
  PFL_CATCH(st, "cuda_graph_capture_begin")
}

int32_t pfl_cuda_graph_capture_begin_shared(pfl_graph g, pfl_stream s, pfl_graph pool_of, pfl_status *st) {
  PFL_TRY
  if (!g || !s || !pool_of) throw ArgError("null graph, stream or pool graph");
  if (!pool_of->stream) throw ArgError("the graph whose memory pool is to be shared was never captured");
  C10_CUDA_CHECK(cudaDeviceSynchronize());
  c10::cuda::CUDACachingAllocator::emptyCache();
  c10::cuda::CUDAStreamGuard guard(s->s);
  g->stream = s->s;
  g->g.capture_begin(pool_of->g.pool());
  PFL_CATCH(st, "cuda_graph_capture_begin_shared")
}

int32_t pfl_cuda_graph_capture_end(pfl_graph g, pfl_status *st) {
  PFL_TRY
  if (!g || !g->stream) throw ArgError("graph is not capturing");
  c10::cuda::CUDAStreamGuard guard(*g->stream);
  g->g.capture_end();
  PFL_CATCH(st, "cuda_graph_capture_end")
}

int32_t pfl_cuda_graph_replay(pfl_graph g, pfl_status *st) {
  PFL_TRY
  if (!g || !g->stream) throw ArgError("graph was never captured");
  c10::cuda::CUDAStreamGuard guard(*g->stream);
  g->g.replay();
  PFL_CATCH(st, "cuda_graph_replay")
}

void pfl_cuda_graph_free(pfl_graph g) { delete g; }

int32_t pfl_cuda_graph_register_generator(pfl_graph g, pfl_generator gen, pfl_status *st) {
  PFL_TRY
  if (!g || !gen) throw ArgError("null graph or generator");
  if (g->stream) throw ArgError("register generators before the capture begins");
  if (gen->g.device().type() != at::kCUDA)
    throw ArgError("a " + gen->g.device().str() + " generator cannot be read by a CUDA graph");
  register_generator(g->g, gen->g);
  PFL_CATCH(st, "cuda_graph_register_generator")
}

int32_t pfl_cuda_set_current_stream(int32_t d, pfl_stream s, pfl_status *st) {
  PFL_TRY
  check_device(d);
  if (s) {
    if (s->s.device_index() != d)
      throw ArgError("stream is on CUDA device " + std::to_string(s->s.device_index()) +
                     ", not " + std::to_string(d));
    c10::cuda::setCurrentCUDAStream(s->s);
  } else {
    c10::cuda::setCurrentCUDAStream(c10::cuda::getDefaultCUDAStream(static_cast<c10::DeviceIndex>(d)));
  }
  PFL_CATCH(st, "cuda_set_current_stream")
}

#else  // CPU build

#define PFL_NO_CUDA(name)        \
  PFL_TRY                        \
  throw NoCudaError();           \
  PFL_CATCH(st, name)

int32_t pfl_cuda_device_count(int32_t *out, pfl_status *st) {
  if (out) *out = 0;
  PFL_NO_CUDA("cuda_device_count")
}
int32_t pfl_cuda_device_name(int32_t, char *, int32_t, pfl_status *st) {
  PFL_NO_CUDA("cuda_device_name")
}
int32_t pfl_cuda_mem_info(int32_t, int64_t *, int64_t *, pfl_status *st) {
  PFL_NO_CUDA("cuda_mem_info")
}
int32_t pfl_cuda_memory_stats(int32_t, int64_t *, int64_t *, int32_t, pfl_status *st) {
  PFL_NO_CUDA("cuda_memory_stats")
}
int32_t pfl_cuda_synchronize(int32_t, pfl_status *st) { PFL_NO_CUDA("cuda_synchronize") }
int32_t pfl_cuda_stream_new(int32_t, pfl_stream *, pfl_status *st) {
  PFL_NO_CUDA("cuda_stream_new")
}
int32_t pfl_cuda_stream_synchronize(pfl_stream, pfl_status *st) {
  PFL_NO_CUDA("cuda_stream_synchronize")
}
void pfl_cuda_stream_free(pfl_stream) {}
int32_t pfl_cuda_graph_new(pfl_graph *, pfl_status *st) { PFL_NO_CUDA("cuda_graph_new") }
int32_t pfl_cuda_graph_capture_begin_shared(pfl_graph, pfl_stream, pfl_graph, pfl_status *st) {
  PFL_NO_CUDA("cuda_graph_capture_begin_shared")
}
int32_t pfl_cuda_graph_capture_begin(pfl_graph, pfl_stream, pfl_status *st) {
  PFL_NO_CUDA("cuda_graph_capture_begin")
}
int32_t pfl_cuda_graph_capture_end(pfl_graph, pfl_status *st) {
  PFL_NO_CUDA("cuda_graph_capture_end")
}
int32_t pfl_cuda_graph_replay(pfl_graph, pfl_status *st) { PFL_NO_CUDA("cuda_graph_replay") }
void pfl_cuda_graph_free(pfl_graph) {}
int32_t pfl_cuda_graph_register_generator(pfl_graph, pfl_generator, pfl_status *st) {
  PFL_NO_CUDA("cuda_graph_register_generator")
}
int32_t pfl_cuda_set_current_stream(int32_t, pfl_stream, pfl_status *st) {
  PFL_NO_CUDA("cuda_set_current_stream")
}

#endif

}  // extern "C"
