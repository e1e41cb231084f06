package cuda

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Scope owns the tensors its ops make and frees them all in one native call. It also
// carries the modes its ops run under (grad, autocast, CUDA stream) and the first error
// any of its ops met. A Scope is used by one goroutine at a time.
type Scope struct {
	owned    []*Tensor
	err      error
	c        *call
	grad     bool
	autocast DType
	stream   *Stream
	closed   bool
	free     []unsafe.Pointer
}

// NewScope returns an empty scope with grad mode on, autocast off, the default stream.
func NewScope() *Scope {
	return &Scope{c: newCall(), grad: true, autocast: noAutocast}
}

// Child returns a new scope with s's modes (grad, autocast, stream) and its error, for a
// stretch of ops whose intermediate results nobody needs afterwards: the caller moves the
// results it keeps into s (s.Adopt), hands an error on (s.Fail(child.Err())) and closes the
// child, which frees the rest then and not when s is reset. Autograd keeps what a backward
// pass needs (the native tensors its graph saved) whichever handles are freed, so a
// model's forward pass can run each block in a child and hold, at its end, only what
// autograd saved instead of every intermediate.
func (s *Scope) Child() *Scope {
	c := NewScope()
	c.grad, c.autocast, c.stream, c.err = s.grad, s.autocast, s.stream, s.err
	return c
}

// Err is the first error met by an op of s since it was made or last Reset.
func (s *Scope) Err() error { return s.err }

// SetGradEnabled turns autograd recording on or off for s's later ops (at::NoGradGuard).
func (s *Scope) SetGradEnabled(on bool) { s.grad = on }

// GradEnabled reports s's grad mode.
func (s *Scope) GradEnabled() bool { return s.grad }

// SetAutocast runs s's later ops under autocast to dt (BFloat16 over float32 master
// weights); Float32 turns it off.
func (s *Scope) SetAutocast(dt DType) {
	if dt == Float32 {
		dt = noAutocast
	}
	s.autocast = dt
}

// SetStream issues s's later ops on st (nil: the device's default stream); ops issued
// on a capturing stream are recorded into its graph.
func (s *Scope) SetStream(st *Stream) { s.stream = st }

// Len is the number of live tensors s owns.
func (s *Scope) Len() int {
	n := 0
	for _, t := range s.owned {
		if t != nil {
			n++
		}
	}
	return n
}

// Keep hands ts from s to the caller, who must Close them. A garbage-collected kept
// tensor that was never closed is counted by Leaks (and never freed).
func (s *Scope) Keep(ts ...*Tensor) {
	for _, t := range ts {
		if t == nil || t.owner != s {
			continue
		}
		s.owned[t.slot] = nil
		t.owner = nil
		t.tracked = true
		t.cleanup = runtime.AddCleanup(t, reportLeak, fmt.Sprintf("%s", t))
	}
}

// Adopt moves t (caller-owned, or owned by another scope) into s, so that s frees it.
func (s *Scope) Adopt(t *Tensor) *Tensor {
	if t == nil || t.h == nil || t.owner == s {
		return t
	}
	if t.owner != nil {
		t.owner.owned[t.slot] = nil
	}
	if t.tracked {
		t.cleanup.Stop()
		t.tracked = false
	}
	t.owner, t.slot = s, len(s.owned)
	s.owned = append(s.owned, t)
	return t
}

// Reset frees every tensor s owns and clears its error; s stays usable with its modes.
// Reusing one scope per training step avoids reallocating its buffers.
func (s *Scope) Reset() {
	s.free = s.free[:0]
	for _, t := range s.owned {
		if t != nil && t.h != nil {
			s.free = append(s.free, t.h)
			t.h, t.owner = nil, nil
		}
	}
	if len(s.free) > 0 {
		nativeFreeMany(s.free)
	}
	clear(s.owned)
	s.owned = s.owned[:0]
	s.err = nil
}

// Close frees every tensor s owns; later ops on s fail with ErrClosed. It is idempotent.
func (s *Scope) Close() error {
	if s == nil || s.closed {
		return nil
	}
	s.Reset()
	s.closed = true
	return nil
}

func (s *Scope) own(h unsafe.Pointer, m meta) *Tensor {
	t := &Tensor{h: h, meta: m, owner: s, slot: len(s.owned)}
	s.owned = append(s.owned, t)
	return t
}

// Fail records err as s's error if s has none yet, so that code built on ops (a model's
// input checks, say) reports through the same Err as the ops.
func (s *Scope) Fail(err error) {
	if err != nil {
		s.fail(err)
	}
}

func (s *Scope) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *Scope) failf(op string, code Code, format string, args ...any) *Tensor {
	s.fail(errorf(op, code, format, args...))
	return nil
}

// ok reports whether s can run op: no earlier error, not closed, library loaded.
func (s *Scope) ok(op string) bool {
	if s.err != nil {
		return false
	}
	if s.closed {
		s.fail(errorf(op, CodeClosed, "scope was closed"))
		return false
	}
	if err := Load(); err != nil {
		s.fail(err)
		return false
	}
	return true
}

// args starts a native op call: it checks s and the required inputs (nil or closed ones
// are errors) and loads them with the optional ones (nil allowed) into the call block.
func (s *Scope) args(op string, required []*Tensor, optional ...*Tensor) bool {
	if !s.ok(op) {
		return false
	}
	c := s.c
	c.reset()
	for i, t := range required {
		if t == nil {
			s.fail(errorf(op, CodeArgument, "input %d is nil", i))
			return false
		}
		if t.h == nil {
			s.fail(errorf(op, CodeClosed, "input %d was closed", i))
			return false
		}
		c.addIn(t.h)
	}
	for i, t := range optional {
		if t != nil && t.h == nil {
			s.fail(errorf(op, CodeClosed, "optional input %d was closed", i))
			return false
		}
		if t == nil {
			c.addIn(nil)
		} else {
			c.addIn(t.h)
		}
	}
	var st unsafe.Pointer
	if s.stream != nil {
		st = s.stream.h
	}
	c.setMode(s.grad, s.autocast, st)
	return true
}

func (s *Scope) ints(v ...int64) {
	for _, x := range v {
		s.c.addInt(x)
	}
}

func (s *Scope) dbls(v ...float64) {
	for _, x := range v {
		s.c.addDbl(x)
	}
}

// run1 runs the loaded call as op code and returns its single result.
func (s *Scope) run1(name string, code int32, gen *Generator) *Tensor {
	r := s.runN(name, code, gen, 1)
	if r == nil {
		return nil
	}
	return r[0]
}

// runN runs the loaded call and returns its n results (nil on error).
func (s *Scope) runN(name string, code int32, gen *Generator, n int) []*Tensor {
	var g unsafe.Pointer
	if gen != nil {
		if gen.h == nil {
			s.fail(errorf(name, CodeClosed, "generator was closed"))
			return nil
		}
		g = gen.h
	}
	if err := s.c.run(name, code, g, n); err != nil {
		s.fail(err)
		return nil
	}
	out := make([]*Tensor, n)
	for i := range out {
		out[i] = s.own(s.c.handleOut(i), s.c.metaOut(i))
	}
	return out
}

// run0 runs an in-place call; it reports success.
func (s *Scope) run0(name string, code int32, gen *Generator) bool {
	return s.runN(name, code, gen, 0) != nil
}
