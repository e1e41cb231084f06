package cuda

import (
	"errors"
	"fmt"
)

// Code classifies an error. Codes below 100 are those of the native library (enum
// pfl_code in csrc/pfl.h); codes from 100 are raised by this package before any native call.
type Code int32

// Error codes.
const (
	CodeTorch          Code = 1  // any other libtorch error
	CodeOutOfMemory    Code = 2  // device or host allocation failed
	CodeIndex          Code = 3  // an index out of range (c10::IndexError)
	CodeValue          Code = 4  // c10::ValueError
	CodeType           Code = 5  // c10::TypeError
	CodeNotImplemented Code = 6  // no kernel for this dtype or device
	CodeCUDA           Code = 7  // an asynchronous CUDA error; the context may be unusable
	CodeNoCUDA         Code = 8  // the native library was built without CUDA
	CodeArgument       Code = 9  // a bad argument reached the native library
	CodeStd            Code = 10 // a C++ std::exception
	CodeUnknown        Code = 11 // anything else thrown in C++
	CodeLinAlg         Code = 12 // c10::LinAlgError

	CodeShape     Code = 100 // shapes do not fit the op (checked in Go)
	CodeDType     Code = 101 // a dtype the op does not take (checked in Go)
	CodeClosed    Code = 102 // a closed tensor, generator, stream or graph was used
	CodeNoLibrary Code = 103 // the native library could not be loaded
	CodeTimeout   Code = 104 // a native call did not return in time (joining a process group)
)

// Sentinel errors for errors.Is. An *Error matches the sentinel of its Code.
var (
	ErrTorch          = errors.New("libtorch error")
	ErrOutOfMemory    = errors.New("out of memory")
	ErrIndex          = errors.New("index out of range")
	ErrValue          = errors.New("invalid value")
	ErrType           = errors.New("invalid type")
	ErrNotImplemented = errors.New("not implemented for this dtype or device")
	ErrCUDA           = errors.New("CUDA error")
	ErrNoCUDA         = errors.New("native library built without CUDA")
	ErrArgument       = errors.New("invalid argument")
	ErrShape          = errors.New("shape mismatch")
	ErrDType          = errors.New("dtype mismatch")
	ErrClosed         = errors.New("use of a closed handle")
	ErrNoLibrary      = errors.New("native library not loaded")
	ErrTimeout        = errors.New("timed out")
)

var codeSentinel = map[Code]error{
	CodeTorch: ErrTorch, CodeOutOfMemory: ErrOutOfMemory, CodeIndex: ErrIndex,
	CodeValue: ErrValue, CodeType: ErrType, CodeNotImplemented: ErrNotImplemented,
	CodeCUDA: ErrCUDA, CodeNoCUDA: ErrNoCUDA, CodeArgument: ErrArgument,
	CodeStd: ErrTorch, CodeUnknown: ErrTorch, CodeLinAlg: ErrTorch,
	CodeShape: ErrShape, CodeDType: ErrDType, CodeClosed: ErrClosed, CodeNoLibrary: ErrNoLibrary,
	CodeTimeout: ErrTimeout,
}

// Error is an error from an op or a native call.
type Error struct {
	Op   string // the Go-level operation, e.g. "matmul"
	Code Code
	Msg  string // what went wrong, with shapes where they matter
}

// Error formats e as "cuda: op: message".
func (e *Error) Error() string { return "cuda: " + e.Op + ": " + e.Msg }

// Is reports whether target is the sentinel of e's Code.
func (e *Error) Is(target error) bool {
	s, ok := codeSentinel[e.Code]
	return ok && s == target
}

func errorf(op string, code Code, format string, args ...any) *Error {
	return &Error{Op: op, Code: code, Msg: fmt.Sprintf(format, args...)}
}
