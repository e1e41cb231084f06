package model

import (
	"fmt"
	"math"

	"pfl/cuda"
)

// Init says how a parameter's values are drawn. Every client row of a stacked parameter
// starts from the same draw (a federated run starts from one global model).
type Init int

// Initializations.
const (
	InitZeros    Init = iota
	InitOnes          // LayerNorm and BatchNorm scales, BatchNorm running variance
	InitFanIn         // U(±1/sqrt(fan_in)): PyTorch's default for nn.Linear and nn.Conv2d (weights and biases)
	InitNormal        // N(0, 1): nn.Embedding, and lucidrains' cls token and position embedding
	InitTimm          // N(0, 0.02²): timm's trunc_normal(std=.02), whose ±2 bounds are 100 σ away
	InitTiny          // N(0, 1e-6²): timm's class token
	InitXavier        // U(±sqrt(6/(fan_in+fan_out))): xavier_uniform of the FedTP text Transformer
	InitSinusoid      // fixed sinusoidal position encoding (a buffer)
	InitKaiming       // N(0, 2/fan_out): kaiming_normal_(mode="fan_out", nonlinearity="relu") of torchvision's ResNet convolutions
)

// Param is one client-stacked parameter or buffer.
type Param struct {
	Name   string       // timm-style name of one client's tensor, e.g. "blocks.3.attn.qkv.weight"
	Role   Role         // what it does
	Block  int          // transformer/stage block index, -1 outside blocks
	Shape  []int64      // one client's shape
	Buffer bool         // a buffer (running statistics, fixed encodings): saved, not trained
	T      *cuda.Tensor // [K, Shape...], owned by the model

	init   Init
	fanIn  int64 // for InitFanIn and InitXavier
	fanOut int64 // for InitXavier and InitKaiming
}

// ConstantInit reports the value every element of a fresh parameter takes when its
// initialization is a constant (1 for normalization scales, 0 for zero-initialized ones).
func (p *Param) ConstantInit() (float64, bool) {
	switch p.init {
	case InitOnes:
		return 1, true
	case InitZeros:
		return 0, true
	}
	return 0, false
}

// Numel is the number of elements of one client's tensor.
func (p *Param) Numel() int64 {
	n := int64(1)
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

// String describes p as name, shape and role.
func (p *Param) String() string { return fmt.Sprintf("%s %v (%s)", p.Name, p.Shape, p.Role) }

// Set is the parameters of a model in a fixed order, with the tensors it owns.
type Set struct {
	K      int
	Device cuda.Device
	DType  cuda.DType
	List   []*Param
	byName map[string]*Param
}

func newSet(k int, dev cuda.Device, dt cuda.DType) *Set {
	return &Set{K: k, Device: dev, DType: dt, byName: map[string]*Param{}}
}

// add declares a parameter; materialize creates the tensors.
func (s *Set) add(name string, role Role, block int, init Init, fanIn, fanOut int64, shape ...int64) *Param {
	if _, dup := s.byName[name]; dup {
		panic("model: duplicate parameter " + name) // a bug in a model's constructor
	}
	p := &Param{Name: name, Role: role, Block: block, Shape: shape, init: init, fanIn: fanIn, fanOut: fanOut}
	s.List = append(s.List, p)
	s.byName[name] = p
	return p
}

// Get returns the parameter with the given name.
func (s *Set) Get(name string) (*Param, bool) {
	p, ok := s.byName[name]
	return p, ok
}

// Trainable lists the parameters that are not buffers.
func (s *Set) Trainable() []*Param {
	var out []*Param
	for _, p := range s.List {
		if !p.Buffer {
			out = append(out, p)
		}
	}
	return out
}

// ByRole lists the parameters with any of the given roles.
func (s *Set) ByRole(roles ...Role) []*Param {
	var out []*Param
	for _, p := range s.List {
		for _, r := range roles {
			if p.Role == r {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// Tensors returns the stacked tensors of ps.
func Tensors(ps []*Param) []*cuda.Tensor {
	out := make([]*cuda.Tensor, len(ps))
	for i, p := range ps {
		out[i] = p.T
	}
	return out
}

// CountByRole is the per-client element count of each role (buffers excluded).
func (s *Set) CountByRole() map[Role]int64 {
	m := map[Role]int64{}
	for _, p := range s.List {
		if !p.Buffer {
			m[p.Role] += p.Numel()
		}
	}
	return m
}

// Count is the number of trainable elements of one client's model.
func (s *Set) Count() int64 {
	var n int64
	for _, p := range s.List {
		if !p.Buffer {
			n += p.Numel()
		}
	}
	return n
}

// materialize allocates every tensor as [K, shape...] and draws its values from gen
// (one draw shared by all K rows); trainable tensors require grad. With a nil gen nothing
// is allocated: the model is declared only, for accounting (counts, MACs, names).
func (s *Set) materialize(gen *cuda.Generator) error {
	if gen == nil {
		return nil
	}
	sc := cuda.NewScope()
	defer sc.Close()
	sc.SetGradEnabled(false)
	for _, p := range s.List {
		one := sc.Zeros(s.DType, s.Device, append([]int64{1}, p.Shape...)...)
		switch p.init {
		case InitOnes:
			sc.FillUniform(gen, one, 1, 1)
		case InitFanIn:
			b := 1 / math.Sqrt(float64(p.fanIn))
			sc.FillUniform(gen, one, -b, b)
		case InitNormal:
			sc.FillNormal(gen, one, 0, 1)
		case InitTimm:
			sc.FillNormal(gen, one, 0, 0.02)
		case InitTiny:
			sc.FillNormal(gen, one, 0, 1e-6)
		case InitXavier:
			b := math.Sqrt(6 / float64(p.fanIn+p.fanOut))
			sc.FillUniform(gen, one, -b, b)
		case InitSinusoid:
			one = sinusoid(sc, p.Shape, s.DType, s.Device)
		case InitKaiming:
			sc.FillNormal(gen, one, 0, math.Sqrt(2/float64(p.fanOut)))
		}
		full := sc.Contiguous(sc.Expand(one, append([]int64{int64(s.K)}, p.Shape...)...))
		if s.K == 1 {
			full = one
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("model: init %s: %w", p.Name, err)
		}
		sc.Keep(full)
		p.T = full
		if !p.Buffer {
			if err := p.T.SetRequiresGrad(true); err != nil {
				return err
			}
		}
	}
	return nil
}

// sinusoid is the fixed encoding PE[pos, 2i] = sin(pos/10000^(2i/d)), PE[pos, 2i+1] = cos(...)
// (Vaswani et al.), shape [1, positions, d].
func sinusoid(sc *cuda.Scope, shape []int64, dt cuda.DType, dev cuda.Device) *cuda.Tensor {
	n, d := shape[0], shape[1]
	v := make([]float64, n*d)
	for pos := int64(0); pos < n; pos++ {
		for i := int64(0); i < d; i++ {
			angle := float64(pos) / math.Pow(10000, float64(2*(i/2))/float64(d))
			if i%2 == 0 {
				v[pos*d+i] = math.Sin(angle)
			} else {
				v[pos*d+i] = math.Cos(angle)
			}
		}
	}
	return sc.To(cuda.FromSlice(sc, dev, v, 1, n, d), dt)
}

// Close frees every tensor of s.
func (s *Set) Close() error {
	for _, p := range s.List {
		p.T.Close()
	}
	return nil
}
