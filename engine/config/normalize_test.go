package config

import "testing"

// TestAutoNormalize checks what data.normalize: auto resolves to: the official
// constants for CIFAR, the dataset's own statistics for the rest (the chest X-rays
// among them).
func TestAutoNormalize(t *testing.T) {
	for spec, want := range map[string]string{
		"cifar10:/data/c10": "cifar10", "cifar100:/data/c100.tar.gz": "cifar100", "fashion-mnist": "dataset",
		"rsna:/data/rsna": "dataset", "rsna:/data/rsna:64": "dataset", "kermany:/data/chest_xray": "dataset",
		"kermany-binary:/data/chest_xray:128": "dataset", "officehome:/data/oh": "dataset",
	} {
		cfg := Default()
		cfg.Data.Dataset = spec
		if got := cfg.Resolved().Data.Normalize; got != want {
			t.Errorf("%s: normalize auto resolved to %q, want %q", spec, got, want)
		}
	}
}
