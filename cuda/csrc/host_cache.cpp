// host_cache.cpp: a caching allocator for large CPU tensors, installed over libtorch's
// default CPU allocator when the library is loaded.
//
// Why: libtorch 1.13's CPU allocator is posix_memalign/free. A training step of stacked
// clients allocates its activations (tens to hundreds of MiB each) and frees them at the
// step's end; glibc serves blocks above its mmap threshold (at most 32 MiB, and every block
// above 64 MiB from a thread's own arena) with mmap and returns them with munmap, so every
// step faults in freshly zeroed pages again. At FedTP's default model size that was half of
// the process's CPU time in the kernel. The steps of a phase repeat the same shapes, so a
// block freed by one step is what the next one asks for: keeping freed large blocks in
// size classes and handing them out again removes those faults.
//
// Blocks under kMinCached bytes are plain posix_memalign/free, as libtorch's own allocator
// (glibc reuses them from its heap); their bytes are counted (host_cache_small_bytes).
// Larger requests are rounded up to a size class (8 classes per power of two: at most 12.5%
// slack) and served from that class's idle blocks when it has one; a new one is
// mapped with mmap and a block that leaves the cache is unmapped, never handed to glibc:
// glibc raises its mmap threshold (up to 32 MiB) each time it frees a mapped block, after
// which blocks under the new threshold come from its heaps and stay resident after free
// (measured: a one-client probe step before FedTP's first round freed ~0.5 GB of such
// blocks, and the evaluation phase then peaked 0.9 GB higher). Idle bytes
// are bounded by the cap (PFL_CPU_CACHE_MB, default kDefaultCapMB): a block freed while the
// cache is full goes back to the system. pfl_host_cache_release frees every idle block (the
// engine calls it after each phase, so one phase's idle blocks never sit beside the next
// phase's). PFL_CPU_CACHE=0 leaves libtorch's allocator in place.
//
// Built against libtorch 1.x only (Debian's 1.13, the CPU build): c10::Allocator's virtual
// interface changed in 2.x (allocate lost its const, copy_data became pure virtual), and
// the CUDA builds keep few CPU tensors. Elsewhere the cache is off and reports so.
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <malloc.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "internal.h"

namespace pfl {

#if TORCH_VERSION_MAJOR == 1
namespace {

constexpr size_t kMinCached = size_t(1) << 20;  // 1 MiB: below, glibc's heap serves well
constexpr size_t kAlign = 64;                   // libtorch's gAlignment (c10/core/alignment.h)
constexpr int64_t kDefaultCapMB = 8192;

// size_class rounds n (>= kMinCached) up to the next of 8 steps per power of two.
size_t size_class(size_t n) {
  size_t p = size_t(1) << (63 - __builtin_clzll(n));  // the power of two at or below n
  size_t step = p / 8;
  return (n + step - 1) / step * step;
}

class HostCache final : public c10::Allocator {
 public:
  explicit HostCache(size_t cap) : cap_(cap) {}

  c10::DataPtr allocate(size_t n) const override {
    return const_cast<HostCache *>(this)->take(n);
  }

  // libtorch's raw_allocate/raw_deallocate (scratch buffers of some kernels) need the
  // context to be the data pointer, so one deleter serves every block, looked up by address.
  c10::DeleterFnPtr raw_deleter() const override { return &HostCache::give_back; }

  void release() {
    std::vector<std::pair<void *, size_t>> out;
    {
      std::lock_guard<std::mutex> lk(mu_);
      for (auto &kv : idle_)
        for (void *p : kv.second) out.emplace_back(p, kv.first);
      idle_.clear();
      idle_bytes_ = 0;
    }
    for (auto &b : out) unmap(b.first, b.second);
  }

  int64_t small_bytes() const { return small_bytes_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  void reset_peak() { peak_.store(held_.load(std::memory_order_relaxed), std::memory_order_relaxed); }

  void stats(int64_t *out) {
    std::lock_guard<std::mutex> lk(mu_);
    out[0] = static_cast<int64_t>(idle_bytes_);
    out[1] = static_cast<int64_t>(live_bytes_);
    out[2] = hits_;
    out[3] = misses_;
  }

 private:
  // map and unmap serve the cached sizes (multiples of 128 KiB, so of the page size).
  static void *map(size_t n) {
    void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  static void unmap(void *p, size_t n) { munmap(p, n); }

  static void *system_alloc(size_t n) {
    void *p = nullptr;
    if (posix_memalign(&p, kAlign, n) != 0) return nullptr;
    return p;
  }

  c10::DataPtr take(size_t n) {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n == 0) return c10::DataPtr(nullptr, nullptr, &HostCache::give_back, cpu);
    if (n < kMinCached) {
      void *p = system_alloc(n);
      if (!p) throw std::bad_alloc();
      int64_t usable = static_cast<int64_t>(malloc_usable_size(p));
      small_bytes_.fetch_add(usable, std::memory_order_relaxed);
      held(usable);
      return c10::DataPtr(p, p, &HostCache::give_back, cpu);
    }
    size_t sz = size_class(n);
    void *p = nullptr;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = idle_.find(sz);
      if (it != idle_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        idle_bytes_ -= sz;
        hits_++;
      } else {
        misses_++;
      }
    }
    if (!p && !(p = map(sz))) {
      release();  // the idle blocks may be what stands between us and the request
      if (!(p = map(sz))) throw std::bad_alloc();
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      live_[p] = sz;
      live_bytes_ += sz;
    }
    held(static_cast<int64_t>(sz));
    return c10::DataPtr(p, p, &HostCache::give_back, cpu);
  }

  static void give_back(void *p);

  void put(void *p) {
    bool keep = false, cached = false;
    size_t sz = 0;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = live_.find(p);
      if (it != live_.end()) {
        cached = true;
        sz = it->second;
        live_.erase(it);
        live_bytes_ -= sz;
        keep = idle_bytes_ + sz <= cap_;
        if (keep) {
          idle_[sz].push_back(p);
          idle_bytes_ += sz;
        }
      }
    }
    if (!cached) {
      int64_t usable = static_cast<int64_t>(malloc_usable_size(p));
      small_bytes_.fetch_sub(usable, std::memory_order_relaxed);
      held(-usable);
      std::free(p);
      return;
    }
    held(-static_cast<int64_t>(sz));
    if (!keep) {
      unmap(p, sz);
    }
  }

  size_t cap_;
  std::mutex mu_;
  std::unordered_map<void *, size_t> live_;  // the cached-size blocks held by tensors
  std::unordered_map<size_t, std::vector<void *>> idle_;
  size_t idle_bytes_ = 0, live_bytes_ = 0;
  int64_t hits_ = 0, misses_ = 0;
  // held adds n (negative: frees) to the bytes tensors hold and raises the peak with them.
  void held(int64_t n) {
    int64_t now = held_.fetch_add(n, std::memory_order_relaxed) + n;
    int64_t p = peak_.load(std::memory_order_relaxed);
    while (now > p && !peak_.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
    }
  }

  // the blocks under kMinCached, which glibc serves: counted apart, without the lock (every
  // small tensor passes here)
  std::atomic<int64_t> small_bytes_{0};
  // every block tensors hold (live and small) and its peak since reset_peak: what a
  // measured step took at its highest, transient buffers of its ops included
  std::atomic<int64_t> held_{0}, peak_{0};
};

// g_cache is never destroyed: tensors freed during static destruction still find it.
HostCache *g_cache = nullptr;

void HostCache::give_back(void *p) {
  if (p) g_cache->put(p);
}

// install_host_cache runs once, when the library is loaded, before any tensor exists.
__attribute__((constructor)) void install_host_cache() {
  const char *on = std::getenv("PFL_CPU_CACHE");
  if (on && std::string(on) == "0") return;
  int64_t cap_mb = kDefaultCapMB;
  if (const char *c = std::getenv("PFL_CPU_CACHE_MB")) {
    char *end = nullptr;
    long long v = std::strtoll(c, &end, 10);
    if (end != c && *end == '\0' && v >= 0) cap_mb = v;  // the Go side refuses malformed values
  }
  g_cache = new HostCache(static_cast<size_t>(cap_mb) << 20);
  // priority 1 beats the default allocator's registration (0)
  c10::SetCPUAllocator(g_cache, 1);
}

}  // namespace

void host_cache_release() {
  if (g_cache) g_cache->release();
  // The small blocks a phase freed sit in glibc's heaps (one per thread that allocated
  // them) until glibc reuses them: a deep model's activations are hundreds of MiB of such
  // blocks, which another thread's next phase does not reuse. Trimming hands their pages
  // back, so the process holds one phase's small blocks at a time.
  malloc_trim(0);
}

bool host_cache_stats(int64_t *out) {
  if (!g_cache) return false;
  g_cache->stats(out);
  return true;
}

bool host_cache_small_stats(int64_t *out) {
  if (!g_cache) return false;
  out[0] = g_cache->small_bytes();
  out[1] = static_cast<int64_t>(mallinfo2().fordblks);
  out[2] = g_cache->peak();
  return true;
}

void host_cache_reset_peak() {
  if (g_cache) g_cache->reset_peak();
}
#else
void host_cache_release() {}
bool host_cache_stats(int64_t *) { return false; }
bool host_cache_small_stats(int64_t *) { return false; }
void host_cache_reset_peak() {}
#endif

}  // namespace pfl
