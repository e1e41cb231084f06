package model

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/safetensors"
)

func TestExportImportRoundTrip(t *testing.T) {
	g, _ := cuda.NewGenerator(3, cuda.CPU)
	defer g.Close()
	cfg := smallViT(true)
	src, err := NewViT("small", cfg, 2, cuda.CPU, cuda.Float32, g)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	for _, p := range src.Params().List { // client rows differ
		s.CopyFrom(p.T, s.Add(p.T, s.Randn(g, cuda.Float32, cuda.CPU, p.T.Shape()...)))
	}
	path := filepath.Join(t.TempDir(), "client1.safetensors")
	if err := Export(src, 1, path); err != nil {
		t.Fatal(err)
	}

	// The file holds timm's names and one client's shapes.
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		name  string
		shape []int64
	}{
		{"patch_embed.proj.weight", []int64{16, 3, 4, 4}},
		{"cls_token", []int64{1, 1, 16}},
		{"pos_embed", []int64{1, 5, 16}},
		{"blocks.0.attn.qkv.weight", []int64{48, 16}},
		{"blocks.0.attn.qkv.bias", []int64{48}},
		{"blocks.1.mlp.fc2.weight", []int64{16, 24}},
		{"norm.weight", []int64{16}},
		{"head.weight", []int64{5, 16}},
	} {
		got, ok := f.Get(want.name)
		if !ok || !slices.Equal(got.Shape, want.shape) || got.DType != safetensors.F32 {
			t.Errorf("%s: found %v, shape %v, dtype %s; want %v F32", want.name, ok, got.Shape, got.DType, want.shape)
		}
	}
	if f.Metadata["pfl_client"] != "1" {
		t.Errorf("metadata %v", f.Metadata)
	}

	dst, err := NewViT("small", cfg, 3, cuda.CPU, cuda.Float32, g)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	missing, err := Import(dst, path)
	if err != nil || len(missing) != 0 {
		t.Fatalf("import: missing %v, %v", missing, err)
	}
	for i, p := range dst.Params().List {
		want := values(t, s, s.Narrow(src.Params().List[i].T, 0, 1, 1))
		for c := int64(0); c < 3; c++ {
			near(t, p.Name, values(t, s, s.Narrow(p.T, 0, c, 1)), want)
		}
	}
}

func TestImportChecksShapesAndSkipsRoles(t *testing.T) {
	g, _ := cuda.NewGenerator(4, cuda.CPU)
	defer g.Close()
	m, err := NewViT("small", smallViT(true), 1, cuda.CPU, cuda.Float32, g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// A hand-made "checkpoint": a 7-class head, one block's qkv, and an extra tensor.
	head, _ := safetensors.FromFloat32("head.weight", []int64{7, 16}, make([]float32, 7*16))
	qkv := make([]float32, 48*16)
	for i := range qkv {
		qkv[i] = float32(i)
	}
	q, _ := safetensors.FromFloat32("blocks.0.attn.qkv.weight", []int64{48, 16}, qkv)
	extra, _ := safetensors.FromFloat32("fc_norm.weight", []int64{16}, make([]float32, 16))
	path := filepath.Join(t.TempDir(), "timm.safetensors")
	if err := safetensors.WriteFile(path, []safetensors.Tensor{head, q, extra}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(m, path); err == nil || !strings.Contains(err.Error(), "head.weight") {
		t.Fatalf("a 7-class head into a 5-class model: %v", err)
	}
	missing, err := Import(m, path, RoleHead)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(missing, "blocks.0.attn.qkv.weight") || !slices.Contains(missing, "blocks.1.attn.qkv.weight") {
		t.Fatalf("missing %v", missing)
	}
	s := cuda.NewScope()
	defer s.Close()
	p, _ := m.Params().Get("blocks.0.attn.qkv.weight")
	got := values(t, s, p.T)
	if got[0] != 0 || got[100] != 100 || got[767] != 767 {
		t.Fatalf("imported qkv %v...", got[:4])
	}
}
