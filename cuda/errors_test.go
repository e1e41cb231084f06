package cuda_test

import (
	"errors"
	"strings"
	"testing"

	"pfl/cuda"
)

func TestErrorsAreValuesAndTheProcessGoesOn(t *testing.T) {
	base := cuda.LiveTensors()
	cases := []struct {
		name     string
		run      func(s *cuda.Scope) *cuda.Tensor
		sentinel error
		mention  []string
	}{
		{"shape mismatch (Go check)", func(s *cuda.Scope) *cuda.Tensor {
			return s.MatMul(s.Zeros(cuda.Float32, cuda.CPU, 2, 3), s.Zeros(cuda.Float32, cuda.CPU, 4, 5))
		}, cuda.ErrShape, []string{"matmul", "[2 3]", "[4 5]"}},
		{"bad dtype (Go check)", func(s *cuda.Scope) *cuda.Tensor {
			x := s.Zeros(cuda.Float32, cuda.CPU, 3, 3)
			return s.IndexSelect(x, 0, s.Zeros(cuda.Float32, cuda.CPU, 2))
		}, cuda.ErrDType, []string{"index_select", "f32", "i64"}},
		{"index out of range (libtorch)", func(s *cuda.Scope) *cuda.Tensor {
			x := s.Zeros(cuda.Float32, cuda.CPU, 3, 3)
			return s.IndexSelect(x, 0, i64(s, []int64{0, 7}))
		}, cuda.ErrIndex, []string{"index_select", "out of range"}},
		{"class index out of range (libtorch)", func(s *cuda.Scope) *cuda.Tensor {
			return s.CrossEntropy(s.Zeros(cuda.Float32, cuda.CPU, 2, 3), i64(s, []int64{0, 9}), nil, cuda.ReduceMean, 0)
		}, cuda.ErrIndex, []string{"cross_entropy"}},
		{"dtype mismatch (Go check)", func(s *cuda.Scope) *cuda.Tensor {
			return s.Linear(s.Zeros(cuda.Float32, cuda.CPU, 2, 3), s.Zeros(cuda.Float64, cuda.CPU, 4, 3), nil)
		}, cuda.ErrDType, []string{"linear", "f32", "f64"}},
		{"kernel missing for dtype (libtorch)", func(s *cuda.Scope) *cuda.Tensor {
			return s.Softmax(s.Zeros(cuda.Int64, cuda.CPU, 3), 0)
		}, cuda.ErrTorch, []string{"softmax"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := cuda.NewScope()
			defer s.Close()
			if got := c.run(s); got != nil {
				t.Fatalf("got a result %v, want an error", got)
			}
			err := s.Err()
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.sentinel) {
				t.Errorf("error %q is not %v", err, c.sentinel)
			}
			var ce *cuda.Error
			if !errors.As(err, &ce) {
				t.Errorf("error %T is not a *cuda.Error", err)
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if strings.Contains(err.Error(), "Exception raised from") || strings.Count(err.Error(), "\n") > 3 {
				t.Errorf("error carries a C++ backtrace: %q", err)
			}
			// Later ops on the failed scope are no-ops; the first error stays.
			if s.Ones(cuda.Float32, cuda.CPU, 1) != nil || s.Err() != err {
				t.Error("op after an error ran or replaced the error")
			}
			// The library and the process keep working.
			s2 := cuda.NewScope()
			defer s2.Close()
			v := values(t, s2, s2.Add(f64(s2, []float64{1}), f64(s2, []float64{2})))
			if v[0] != 3 {
				t.Fatalf("1+2 = %v after an error", v)
			}
		})
	}
	if got := cuda.LiveTensors(); got != base {
		t.Fatalf("%d live tensors after failing ops, %d before", got, base)
	}
}

func TestNoCUDAIsAClearError(t *testing.T) {
	info, err := cuda.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	if info.HasCUDA {
		t.Skip("CUDA build")
	}
	if _, err := cuda.NewStream(cuda.CUDA(0)); !errors.Is(err, cuda.ErrNoCUDA) {
		t.Errorf("NewStream: %v, want ErrNoCUDA", err)
	}
	if _, err := cuda.NewGraph(); !errors.Is(err, cuda.ErrNoCUDA) {
		t.Errorf("NewGraph: %v, want ErrNoCUDA", err)
	}
	if err := cuda.SetCurrentStream(cuda.CUDA(0), nil); !errors.Is(err, cuda.ErrNoCUDA) {
		t.Errorf("SetCurrentStream: %v, want ErrNoCUDA", err)
	}
	if err := cuda.SetCurrentStream(cuda.CPU, nil); err == nil {
		t.Error("SetCurrentStream on the CPU: no error")
	}
	if _, err := cuda.CUDADeviceCount(); !errors.Is(err, cuda.ErrNoCUDA) || !strings.Contains(err.Error(), "without CUDA") {
		t.Errorf("CUDADeviceCount: %v, want a 'built without CUDA' error", err)
	}
	s := newScope(t)
	if s.Zeros(cuda.Float32, cuda.CUDA(0), 2) != nil || !errors.Is(s.Err(), cuda.ErrNoCUDA) {
		t.Errorf("tensor on cuda:0: %v, want ErrNoCUDA", s.Err())
	}
}

func TestNativeArgumentChecks(t *testing.T) {
	s := newScope(t)
	// Go checks catch the common mistakes; the native layer still refuses a bad view.
	x := s.Transpose(s.Zeros(cuda.Float32, cuda.CPU, 2, 3), 0, 1)
	if s.View(x, 6) != nil {
		t.Fatal("view of a non-contiguous tensor succeeded")
	}
	if err := s.Err(); !errors.Is(err, cuda.ErrTorch) || !strings.Contains(err.Error(), "view") {
		t.Fatalf("view error %v", err)
	}
}
