package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
)

// DType is a safetensors dtype string such as "F32".
type DType string

// The dtypes this package knows. Any of them can be read and written as raw bytes;
// Float32s and Float64s convert the floating-point ones F32, F64, BF16 and F16.
const (
	F32    DType = "F32"     // IEEE 754 single precision
	F64    DType = "F64"     // IEEE 754 double precision
	BF16   DType = "BF16"    // bfloat16: the top 16 bits of a float32
	F16    DType = "F16"     // IEEE 754 half precision
	F8E4M3 DType = "F8_E4M3" // 8-bit float, 4 exponent and 3 mantissa bits (raw bytes only)
	F8E5M2 DType = "F8_E5M2" // 8-bit float, 5 exponent and 2 mantissa bits (raw bytes only)
	I64    DType = "I64"     // signed 64-bit integer
	I32    DType = "I32"     // signed 32-bit integer
	I16    DType = "I16"     // signed 16-bit integer
	I8     DType = "I8"      // signed 8-bit integer
	U64    DType = "U64"     // unsigned 64-bit integer
	U32    DType = "U32"     // unsigned 32-bit integer
	U16    DType = "U16"     // unsigned 16-bit integer
	U8     DType = "U8"      // unsigned 8-bit integer
	Bool   DType = "BOOL"    // one byte per element, 0 or 1
)

// Size returns the number of bytes per element, or 0 for an unknown dtype. A zero size is
// how readers and writers recognise a dtype they cannot lay out.
func (d DType) Size() int {
	switch d {
	case F64, I64, U64:
		return 8
	case F32, I32, U32:
		return 4
	case BF16, F16, I16, U16:
		return 2
	case F8E4M3, F8E5M2, I8, U8, Bool:
		return 1
	}
	return 0
}

// Tensor is one named tensor: raw little-endian bytes with dtype and shape. Data holds
// product(Shape) elements of DType.Size() bytes each; a 0-d scalar has an empty Shape and
// one element.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
	// Source, when Data is nil, produces the data on demand: Write asks for each tensor's
	// bytes only when it writes them and drops them after, so a file larger than the
	// memory free can be written from device tensors one at a time (a checkpoint of a
	// hypernetwork of hundreds of millions of parameters). It may be called more than once
	// and must return the same bytes each time.
	Source func() ([]byte, error)
}

// produce fills the receiver's Data from its Source.
func (t *Tensor) produce() error {
	data, err := t.Bytes()
	t.Data = data
	return err
}

// Bytes is the tensor's data: Data, or what Source produces, checked against the shape.
func (t Tensor) Bytes() ([]byte, error) {
	if t.Data != nil || t.Source == nil {
		return t.Data, nil
	}
	data, err := t.Source()
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	t.Data = data
	return data, t.check()
}

// numel returns the product of shape, or an error if a dimension is negative or the
// product overflows int64. A zero dimension makes the product 0 whatever the others are.
func numel(shape []int64) (int64, error) {
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d == 0 {
			return 0, nil
		}
	}
	n := int64(1)
	for _, d := range shape {
		hi, lo := bits.Mul64(uint64(n), uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("shape %v has too many elements", shape)
		}
		n = int64(lo)
	}
	return n, nil
}

// byteSize returns the number of data bytes a tensor of this dtype and shape occupies.
func byteSize(dt DType, shape []int64) (uint64, error) {
	size := dt.Size()
	if size == 0 {
		return 0, fmt.Errorf("unknown dtype %q", string(dt))
	}
	n, err := numel(shape)
	if err != nil {
		return 0, err
	}
	hi, lo := bits.Mul64(uint64(n), uint64(size))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, fmt.Errorf("shape %v of %s is too large", shape, dt)
	}
	return lo, nil
}

// check reports whether the tensor is self-consistent: known dtype, valid shape, and
// exactly the data length the shape asks for (for a Source, once it produced the data).
func (t Tensor) check() error {
	want, err := byteSize(t.DType, t.Shape)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if t.Data == nil && t.Source != nil {
		return nil // checked when Bytes produces it
	}
	if uint64(len(t.Data)) != want {
		return fmt.Errorf("tensor %q: has %d data bytes but shape %v of %s needs %d",
			t.Name, len(t.Data), t.Shape, t.DType, want)
	}
	return nil
}

// Float32s returns the elements converted to float32. It supports F32, F64 (rounded),
// BF16 and F16, and returns an error for any other dtype or an inconsistent tensor.
func (t Tensor) Float32s() ([]float32, error) {
	if err := t.produce(); err != nil {
		return nil, err
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	n := len(t.Data) / t.DType.Size()
	out := make([]float32, n)
	d := t.Data
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		}
	case F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(d[8*i:])))
		}
	case BF16:
		for i := range out {
			out[i] = bf16ToFloat32(binary.LittleEndian.Uint16(d[2*i:]))
		}
	case F16:
		for i := range out {
			out[i] = f16ToFloat32(binary.LittleEndian.Uint16(d[2*i:]))
		}
	default:
		return nil, fmt.Errorf("tensor %q: dtype %s is not a floating-point type this package converts", t.Name, t.DType)
	}
	return out, nil
}

// Float64s returns the elements converted to float64. It supports F32, F64, BF16 and F16
// (all exactly), and returns an error for any other dtype or an inconsistent tensor.
func (t Tensor) Float64s() ([]float64, error) {
	if err := t.produce(); err != nil {
		return nil, err
	}
	if t.DType == F64 {
		if err := t.check(); err != nil {
			return nil, err
		}
		out := make([]float64, len(t.Data)/8)
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
		return out, nil
	}
	// Every other supported dtype is exactly representable as float32.
	f, err := t.Float32s()
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out, nil
}

// FromFloat32 builds an F32 tensor from v, which must hold product(shape) values.
func FromFloat32(name string, shape []int64, v []float32) (Tensor, error) {
	if err := checkLen(name, shape, len(v)); err != nil {
		return Tensor{}, err
	}
	data := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	return Tensor{Name: name, DType: F32, Shape: append([]int64{}, shape...), Data: data}, nil
}

// FromFloat64 builds an F64 tensor from v, which must hold product(shape) values.
func FromFloat64(name string, shape []int64, v []float64) (Tensor, error) {
	if err := checkLen(name, shape, len(v)); err != nil {
		return Tensor{}, err
	}
	data := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(x))
	}
	return Tensor{Name: name, DType: F64, Shape: append([]int64{}, shape...), Data: data}, nil
}

func checkLen(name string, shape []int64, n int) error {
	want, err := numel(shape)
	if err != nil {
		return fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	if want != int64(n) {
		return fmt.Errorf("safetensors: tensor %q: %d values for shape %v of %d elements", name, n, shape, want)
	}
	return nil
}

// bf16ToFloat32 widens a bfloat16, which is the top half of a float32, exactly.
func bf16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// f16ToFloat32 widens an IEEE half exactly, including subnormals, infinities and NaNs
// (whose payload is kept).
func f16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0: // zero or subnormal: mant * 2^-24
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// File is a decoded file.
type File struct {
	Tensors  []Tensor          // in data-offset order, which is the order Write lays them out
	Metadata map[string]string // the "__metadata__" object; nil when the file has none

	closer io.Closer // the open file of OpenFile
}

// Close closes the file OpenFile opened (its tensors' data can no longer be read); nothing
// for a File that holds its data.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	err := f.closer.Close()
	f.closer = nil
	return err
}

// Get returns the tensor with the given name.
func (f *File) Get(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// errEmptyName is returned for a tensor with an empty name, which PyTorch state dicts
// cannot hold.
var errEmptyName = errors.New("tensor with an empty name")

// metadataKey is the reserved header key that holds the metadata rather than a tensor.
const metadataKey = "__metadata__"
