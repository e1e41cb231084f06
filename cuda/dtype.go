package cuda

import (
	"fmt"
	"strconv"
	"strings"
)

// DType is an element type. The values are those of enum pfl_dtype in csrc/pfl.h.
type DType int32

// Element types.
const (
	Float32  DType = 0
	Float64  DType = 1
	BFloat16 DType = 2
	Int64    DType = 3
	Uint8    DType = 4
	Bool     DType = 5
	Float16  DType = 6
	Int32    DType = 7
)

// noAutocast marks autocast as off in a call's context.
const noAutocast DType = -1

var dtypeNames = map[DType]string{
	Float32: "f32", Float64: "f64", BFloat16: "bf16", Int64: "i64", Uint8: "u8",
	Bool: "bool", Float16: "f16", Int32: "i32",
}

// String is the short name of d, e.g. "f32".
func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	return d == Float32 || d == Float64 || d == BFloat16 || d == Float16
}

// Size is the size of one element in bytes.
func (d DType) Size() int {
	switch d {
	case Float64, Int64:
		return 8
	case Float32, Int32:
		return 4
	case BFloat16, Float16:
		return 2
	default:
		return 1
	}
}

// DeviceType is CPU or CUDA (enum pfl_device_type).
type DeviceType int32

// Device types.
const (
	CPUDevice  DeviceType = 0
	CUDADevice DeviceType = 1
)

// Device names where a tensor lives. Index is -1 for the CPU.
type Device struct {
	Type  DeviceType
	Index int
}

// CPU is the host.
var CPU = Device{Type: CPUDevice, Index: -1}

// CUDA returns CUDA device i.
func CUDA(i int) Device { return Device{Type: CUDADevice, Index: i} }

// IsCUDA reports whether d is a CUDA device.
func (d Device) IsCUDA() bool { return d.Type == CUDADevice }

// String is "cpu" or "cuda:N", as ParseDevice reads it.
func (d Device) String() string {
	if d.Type == CUDADevice {
		return fmt.Sprintf("cuda:%d", d.Index)
	}
	return "cpu"
}

// MarshalText writes d as String does, so that a config file holds "cpu" or "cuda:N".
func (d Device) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads d as ParseDevice does: a config parses its device once, where it is
// read.
func (d *Device) UnmarshalText(b []byte) error {
	dev, err := ParseDevice(string(b))
	if err != nil {
		return err
	}
	*d = dev
	return nil
}

// ParseDevice reads "cpu", "cuda" (device 0) or "cuda:N".
func ParseDevice(s string) (Device, error) {
	switch {
	case s == "cpu":
		return CPU, nil
	case s == "cuda":
		return CUDA(0), nil
	case strings.HasPrefix(s, "cuda:"):
		i, err := strconv.Atoi(s[len("cuda:"):])
		if err == nil && i >= 0 {
			return CUDA(i), nil
		}
	}
	return Device{}, fmt.Errorf("cuda: device %q: want cpu, cuda or cuda:N", s)
}
