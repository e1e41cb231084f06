package cuda

import (
	"fmt"
	"os"
	"strconv"
)

// The native library keeps freed CPU tensors of 1 MiB and more in size classes and hands
// them out again (cuda/csrc/host_cache.cpp): the steps of a training phase repeat the same
// shapes, and without the cache glibc returns those blocks to the kernel at every free
// and every step page-faults fresh zeroed memory. The cache exists in builds against
// libtorch 1.x (the CPU build); others keep libtorch's allocator. These environment
// variables, read when the library is loaded, configure it.
const (
	// HostCacheEnv set to 0 leaves libtorch's own CPU allocator in place.
	HostCacheEnv = "PFL_CPU_CACHE"
	// HostCacheCapEnv bounds the idle bytes the cache keeps, in MiB (default 8192); a block
	// freed while the cache holds that much goes back to the system.
	HostCacheCapEnv = "PFL_CPU_CACHE_MB"
)

// checkHostCacheEnv refuses malformed values of the cache's variables before the library
// reads them (it would otherwise fall back to its defaults silently).
func checkHostCacheEnv() error {
	if v, ok := os.LookupEnv(HostCacheEnv); ok && v != "0" && v != "1" {
		return fmt.Errorf("%s=%q: want 0 (libtorch's allocator) or 1 (the caching allocator, the default)", HostCacheEnv, v)
	}
	if v, ok := os.LookupEnv(HostCacheCapEnv); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || n > 1<<40 {
			return fmt.Errorf("%s=%q: want the idle cache's cap in MiB, an integer from 0", HostCacheCapEnv, v)
		}
	}
	return nil
}

// HostCacheStats describes the caching allocator of large CPU tensors.
type HostCacheStats struct {
	IdleBytes int64 // freed blocks kept for reuse
	LiveBytes int64 // blocks held by tensors now
	// SmallBytes is the bytes held by tensors in blocks under the cache's 1 MiB threshold,
	// which glibc serves (a deep, narrow model's activations are mostly such blocks).
	SmallBytes int64
	// HeapFreeBytes is what glibc's heaps hold free: small blocks freed and not yet reused,
	// resident until ReleaseHostCache trims them.
	HeapFreeBytes int64
	// PeakBytes is the most bytes CPU tensors held at once (LiveBytes + SmallBytes) since
	// ResetHostCachePeak: a measured step's high-water mark, its ops' transient buffers
	// included.
	PeakBytes int64
	Hits      int64 // requests served from idle blocks
	Misses    int64 // requests served by the system
}

// HostCache reports the CPU caching allocator's state; false when it is off (PFL_CPU_CACHE=0,
// a build against libtorch 2.x) or the library is not loaded.
func HostCache() (HostCacheStats, bool) {
	if Load() != nil {
		return HostCacheStats{}, false
	}
	return nativeHostCacheStats()
}

// ReleaseHostCache frees the CPU caching allocator's idle blocks and returns the free pages
// of glibc's heaps (malloc_trim). The engine calls it after each phase of a round
// (training, aggregation, evaluation), so one phase's idle blocks do not sit beside the
// next phase's different shapes and the process's peak stays that of its largest phase.
func ReleaseHostCache() {
	if Load() == nil {
		nativeHostCacheRelease()
	}
}

// ResetHostCachePeak starts HostCacheStats.PeakBytes afresh from the bytes held now.
func ResetHostCachePeak() {
	if Load() == nil {
		nativeHostCacheResetPeak()
	}
}
