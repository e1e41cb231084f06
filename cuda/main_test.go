package cuda_test

import (
	"fmt"
	"math"
	"os"
	"testing"

	"pfl/cuda"
)

// TestMain fails fast, with the build command, when the native library is missing.
func TestMain(m *testing.M) {
	if err := cuda.Load(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// newScope returns a scope closed at the end of the test and checked for errors there.
func newScope(t testing.TB) *cuda.Scope {
	t.Helper()
	s := cuda.NewScope()
	t.Cleanup(func() { s.Close() })
	return s
}

func f64(s *cuda.Scope, data []float64, shape ...int64) *cuda.Tensor {
	return cuda.FromSlice(s, cuda.CPU, data, shape...)
}

func i64(s *cuda.Scope, data []int64, shape ...int64) *cuda.Tensor {
	return cuda.FromSlice(s, cuda.CPU, data, shape...)
}

// values reads t as float64 and fails the test on an error of t's scope.
func values(t testing.TB, s *cuda.Scope, x *cuda.Tensor) []float64 {
	t.Helper()
	if err := s.Err(); err != nil {
		t.Fatalf("scope error: %v", err)
	}
	v, err := x.Float64s()
	if err != nil {
		t.Fatalf("read %v: %v", x, err)
	}
	return v
}

// closeEnough compares got with want elementwise: |got-want| <= atol + rtol*|want|.
func closeEnough(t testing.TB, name string, got, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d: got %v want %v", name, len(got), len(want), got, want)
	}
	bad := 0
	for i := range got {
		if math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > atol+rtol*math.Abs(want[i]) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.10g, want %.10g", name, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d values differ", name, bad, len(got))
	}
}

func shapeIs(t testing.TB, name string, x *cuda.Tensor, want ...int64) {
	t.Helper()
	got := x.Shape()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: shape %v, want %v", name, got, want)
	}
}
