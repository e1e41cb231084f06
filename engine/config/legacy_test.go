package config

import (
	"encoding/json"
	"testing"
)

// TestLegacyZeroSizesReadAsUnset: a config.json written when the model sizes were plain
// numbers records an unset size as 0; it must load as unset (the preset's size, which that
// run trained), while a size that was set keeps its value.
func TestLegacyZeroSizesReadAsUnset(t *testing.T) {
	cfg := Default()
	cfg.Model.Preset = "tiny-vit"
	three := int64(3)
	cfg.Model.Dim = &three
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"depth", "patch", "heads", "head_dim", "mlp", "prompts"} {
		tree["model"].(map[string]any)[key] = 0
	}
	tree["model"].(map[string]any)["prefix"].(map[string]any)["mid"] = 0
	tree["model"].(map[string]any)["adapter"].(map[string]any)["scale"] = 0
	legacy, _ := json.Marshal(tree)
	got, err := ReadJSON(legacy)
	if err != nil {
		t.Fatalf("a legacy config.json: %v", err)
	}
	m := got.Model
	for name, p := range map[string]*int64{"depth": m.Depth, "patch": m.Patch, "heads": m.Heads, "head_dim": m.HeadDim,
		"mlp": m.MLP, "prompts": m.Prompts, "prefix.mid": m.Prefix.Mid} {
		if p != nil {
			t.Errorf("model.%s: legacy 0 read as %d, want unset", name, *p)
		}
	}
	if m.Adapter.Scale != nil {
		t.Errorf("model.adapter.scale: legacy 0 read as %g, want unset", *m.Adapter.Scale)
	}
	if m.Dim == nil || *m.Dim != 3 {
		t.Errorf("model.dim: %v, want 3", m.Dim)
	}
	if _, err := ReadJSON(append(append([]byte{}, legacy...), []byte(" {}")...)); err == nil {
		t.Error("a legacy config.json with data after it was accepted")
	}
}
