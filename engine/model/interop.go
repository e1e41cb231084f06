package model

import (
	"fmt"
	"slices"

	"pfl/cuda"
	"pfl/engine/safetensors"
)

// Export writes client k's parameters and buffers to path as a safetensors file (float32)
// under the model's parameter names — timm's for the ViTs — so that any client's
// personalized model loads into PyTorch with load_state_dict.
func Export(m Model, client int, path string) error {
	ps := m.Params()
	if client < 0 || client >= ps.K {
		return fmt.Errorf("model: export client %d of %d", client, ps.K)
	}
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	var out []safetensors.Tensor
	for _, p := range ps.List {
		v, err := s.To(s.Narrow(p.T, 0, int64(client), 1), cuda.Float32).Float32s()
		if err == nil {
			err = s.Err()
		}
		if err != nil {
			return fmt.Errorf("model: export %s: %w", p.Name, err)
		}
		t, err := safetensors.FromFloat32(p.Name, p.Shape, v)
		if err != nil {
			return err
		}
		out = append(out, t)
	}
	meta := map[string]string{"format": "pt", "pfl_model": m.Name(), "pfl_client": fmt.Sprint(client)}
	return safetensors.WriteFile(path, out, meta)
}

// Import copies every tensor of a safetensors file whose name is a parameter of m into all
// of m's client rows (F32, F64, BF16 and F16 are converted), e.g. to start every client
// from a timm checkpoint. Parameters whose role is in skip are left alone (a pretrained
// head of another class count, say). Tensors the model does not have are ignored; the
// parameters the file lacks are returned. A shape mismatch is an error naming both shapes.
func Import(m Model, path string, skip ...Role) (missing []string, err error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	for _, p := range m.Params().List {
		if slices.Contains(skip, p.Role) {
			continue
		}
		t, ok := f.Get(p.Name)
		if !ok {
			missing = append(missing, p.Name)
			continue
		}
		if !slices.Equal(t.Shape, p.Shape) {
			return missing, fmt.Errorf("model: import %s: %s has shape %v, the model %v", path, p.Name, t.Shape, p.Shape)
		}
		v, err := t.Float32s()
		if err != nil {
			return missing, fmt.Errorf("model: import %s: %s: %w", path, p.Name, err)
		}
		src := s.To(cuda.FromSlice(s, p.T.Device(), v, append([]int64{1}, p.Shape...)...), p.T.DType())
		s.CopyFrom(p.T, src) // [1, ...] broadcasts to every client row
		if err := s.Err(); err != nil {
			return missing, fmt.Errorf("model: import %s: %s: %w", path, p.Name, err)
		}
		s.Reset()
	}
	return missing, nil
}
