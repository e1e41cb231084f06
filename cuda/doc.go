// Package cuda is pfl's binding of libtorch: tensors on the CPU or a CUDA device, the ops
// that models, federated algorithms and hypernetworks need, autograd (including the
// vector-Jacobian products of FedTP's server update), explicit random generators, CUDA
// streams and graphs.
//
// It is the only package in pfl with import "C". It does not link libtorch: it loads
// pfl's native library (libpfltorch.so, built by the top-level CMakeLists.txt from
// cuda/csrc) at run time, from $PFL_NATIVE_LIB or a build/ folder above the working
// directory or the executable. So `go build`, `go vet` and every --help work on a machine
// without libtorch, and the same binary runs against a CPU build (Debian's libtorch 1.13)
// and a CUDA build (the libtorch of a PyTorch 2.x install).
//
// # Lifetimes
//
// Go's garbage collector cannot see libtorch memory, so nothing here is freed by a
// finalizer. Every tensor is owned either by a Scope, which frees all its tensors in one
// call when closed, or by the caller, who calls Close. The usual shape of a step:
//
//	s := cuda.NewScope()
//	defer s.Close()
//	y := s.Linear(x, w, b)
//	loss := s.CrossEntropy(y, target, nil, cuda.ReduceMean, 0)
//	s.Backward([]*cuda.Tensor{loss}, nil, false)
//	if err := s.Err(); err != nil { ... }
//
// Persistent tensors (parameters, optimizer state) are moved out of a scope with Keep and
// closed by their owner. LiveTensors reports the native library's count of live handles,
// so a test can prove that a step or a round leaks nothing.
//
// # Errors
//
// Ops on a Scope record the first error and turn every later op on that scope into a
// no-op returning nil (like bufio.Writer), so a forward pass reads as straight-line code
// and is checked once with Scope.Err. Shape and dtype mistakes are caught in Go before the
// native call and name the op and the shapes; errors raised inside libtorch come back in
// the same call with their class, so errors.Is(err, ErrOutOfMemory), ErrIndex and the
// other sentinels work. A failed op leaves the process and the library usable.
//
// # Threads
//
// libtorch keeps grad mode, autocast and the current CUDA stream per OS thread. Every
// native call installs the modes of its Scope for its own duration, so a call is correct
// on whatever thread it runs; still, drive libtorch from one goroutine locked to its OS
// thread (Pinned does that), as CUDA-graph capture requires it, and because autograd numbers
// its nodes from a per-thread counter: a graph built across two threads is differentiated
// in another order, which changes the float rounding of its gradients.
package cuda
