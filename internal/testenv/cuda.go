package testenv

import (
	"testing"

	"pfl/cuda"
)

// RequireCUDA skips t unless the native library was built with CUDA and sees a device; it
// returns CUDA device 0.
func RequireCUDA(t testing.TB) cuda.Device {
	t.Helper()
	info, err := cuda.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	if !info.CUDAAvailable {
		t.Skipf("no CUDA (library %s, torch %s, built with CUDA: %v)", info.LibraryPath, info.TorchVersion, info.HasCUDA)
	}
	return cuda.CUDA(0)
}
