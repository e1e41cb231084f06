package cuda

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// meta is what Go keeps of a tensor so that shapes are checked without a native call.
type meta struct {
	dtype        DType
	device       Device
	shape        []int64
	requiresGrad bool
}

// Tensor is a handle to one libtorch tensor. A Tensor is owned by the Scope that made it
// until Scope.Keep hands it to the caller, who must then Close it. A Tensor is not safe
// for concurrent use.
type Tensor struct {
	h unsafe.Pointer
	meta
	owner   *Scope
	slot    int
	cleanup runtime.Cleanup
	tracked bool
}

// Elem is the set of Go element types that map onto a DType.
type Elem interface {
	~float32 | ~float64 | ~int64 | ~int32 | ~uint8 | ~bool
}

func dtypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int64:
		return Int64
	case int32:
		return Int32
	case uint8:
		return Uint8
	default:
		return Bool
	}
}

// FromSlice makes a tensor of the given shape on dev from data (copied), owned by s.
// With no shape, the tensor is one-dimensional. bf16 tensors are made from float32 data
// with Scope.To.
func FromSlice[T Elem](s *Scope, dev Device, data []T, shape ...int64) *Tensor {
	const op = "from_slice"
	if !s.ok(op) {
		return nil
	}
	if len(shape) == 0 {
		shape = []int64{int64(len(data))}
	}
	if len(shape) > maxDims {
		return s.failf(op, CodeShape, "rank %d exceeds %d", len(shape), maxDims)
	}
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return s.failf(op, CodeShape, "negative dimension in %v", shape)
		}
		n *= d
	}
	if n != int64(len(data)) {
		return s.failf(op, CodeShape, "%d values do not fill shape %v (%d elements)", len(data), shape, n)
	}
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	h, m, err := nativeFromData(p, dtypeOf[T](), shape, dev)
	if err != nil {
		s.fail(err)
		return nil
	}
	return s.own(h, m)
}

// ToSlice copies t to the host as a flat slice in row-major order, converting elements
// to T (e.g. bf16 to float32).
func ToSlice[T Elem](t *Tensor) ([]T, error) {
	if err := t.check("to_slice"); err != nil {
		return nil, err
	}
	out := make([]T, t.Numel())
	var p unsafe.Pointer
	if len(out) > 0 {
		p = unsafe.Pointer(&out[0])
	}
	dt := dtypeOf[T]()
	if err := nativeToHost(t.h, dt, p, int64(len(out)*dt.Size())); err != nil {
		return nil, err
	}
	return out, nil
}

// Float32s copies t to the host as float32 values.
func (t *Tensor) Float32s() ([]float32, error) { return ToSlice[float32](t) }

// Float64s copies t to the host as float64 values.
func (t *Tensor) Float64s() ([]float64, error) { return ToSlice[float64](t) }

// Int64s copies t to the host as int64 values.
func (t *Tensor) Int64s() ([]int64, error) { return ToSlice[int64](t) }

// Item returns the value of a one-element tensor as a float64.
func (t *Tensor) Item() (float64, error) {
	if err := t.check("item"); err != nil {
		return 0, err
	}
	if t.Numel() != 1 {
		return 0, errorf("item", CodeShape, "tensor of shape %v has %d elements, want 1", t.shape, t.Numel())
	}
	v, err := ToSlice[float64](t)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

func (t *Tensor) check(op string) error {
	if t == nil {
		return errorf(op, CodeArgument, "nil tensor")
	}
	if t.h == nil {
		return errorf(op, CodeClosed, "tensor was closed")
	}
	return nil
}

// DType is the element type. Accessors are nil-safe (zero values for nil), since ops
// return nil after an error and model code may read a shape before checking Scope.Err.
func (t *Tensor) DType() DType {
	if t == nil {
		return 0
	}
	return t.dtype
}

// Device is where the tensor lives.
func (t *Tensor) Device() Device {
	if t == nil {
		return CPU
	}
	return t.device
}

// Shape returns a copy of the dimensions (nil for a nil tensor).
func (t *Tensor) Shape() []int64 {
	if t == nil {
		return nil
	}
	return append([]int64(nil), t.shape...)
}

// Dim is the number of dimensions.
func (t *Tensor) Dim() int {
	if t == nil {
		return 0
	}
	return len(t.shape)
}

// Size is dimension i; negative i counts from the end. It is 0 when i is out of range.
func (t *Tensor) Size(i int) int64 {
	if t == nil {
		return 0
	}
	if i < 0 {
		i += len(t.shape)
	}
	if i < 0 || i >= len(t.shape) {
		return 0
	}
	return t.shape[i]
}

// Numel is the number of elements (0 for a nil tensor).
func (t *Tensor) Numel() int64 {
	if t == nil {
		return 0
	}
	return numel(t.shape)
}

// RequiresGrad reports whether autograd records ops on t.
func (t *Tensor) RequiresGrad() bool { return t != nil && t.requiresGrad }

// Closed reports whether t has been freed (by Close or its scope).
func (t *Tensor) Closed() bool { return t == nil || t.h == nil }

// String describes t (dtype, device, shape) for logs and errors.
func (t *Tensor) String() string {
	if t.Closed() {
		return "Tensor(closed)"
	}
	return fmt.Sprintf("Tensor(%s %s %v)", t.dtype, t.device, t.shape)
}

// SetRequiresGrad makes t a leaf that autograd records (or stops recording).
func (t *Tensor) SetRequiresGrad(flag bool) error {
	if err := t.check("set_requires_grad"); err != nil {
		return err
	}
	if err := nativeSetRequiresGrad(t.h, flag); err != nil {
		return err
	}
	t.requiresGrad = flag
	return nil
}

// Close frees t now. It is idempotent and nil-safe; a tensor owned by a scope may be
// closed early, and the scope then skips it.
func (t *Tensor) Close() error {
	if t == nil || t.h == nil {
		return nil
	}
	nativeFree(t.h)
	t.release()
	return nil
}

// release forgets the handle after it was freed.
func (t *Tensor) release() {
	t.h = nil
	if t.owner != nil {
		t.owner.owned[t.slot] = nil
		t.owner = nil
	}
	if t.tracked {
		t.cleanup.Stop()
		t.tracked = false
	}
}

// leaked counts caller-owned tensors that became unreachable without Close.
var leaked atomic.Int64

// Leaks is the number of caller-owned tensors the garbage collector found unreachable
// before they were closed. Their memory is not freed (finalizers never free); set
// PFL_LEAK_LOG=1 to have each reported on stderr.
func Leaks() int64 { return leaked.Load() }

var leakLog = os.Getenv("PFL_LEAK_LOG") == "1"

func reportLeak(desc string) {
	leaked.Add(1)
	if leakLog {
		fmt.Fprintf(os.Stderr, "pfl: leaked %s (kept from a scope, never closed)\n", desc)
	}
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// unsafeHandle is a native handle as Go stores it.
type unsafeHandle = unsafe.Pointer
