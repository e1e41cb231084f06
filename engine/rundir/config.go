package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"pfl/engine/config"
)

// LoadConfig reads the config a run directory was started with (its config.json),
// resolved, with Out and Name where dir lies now, whatever config.json says. Keys the file
// lacks are an error (config.ReadJSON), and so is an unknown key, naming it.
func LoadConfig(dir string) (config.Config, error) {
	cfg, err := LoadGridConfig(dir)
	if err != nil {
		return config.Config{}, err
	}
	return cfg.Resolved(), nil
}

// LoadGridConfig is LoadConfig without resolving: a grid's config.json as written, so that
// each point resolves with its own values (a swept train.lr is followed by the keys that
// follow it).
func LoadGridConfig(dir string) (config.Config, error) {
	path := filepath.Join(dir, "config.json")
	b, err := config.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return config.Config{}, fmt.Errorf("%s is not a pfl run directory (it has no config.json)", dir)
	}
	if err != nil {
		return config.Config{}, err
	}
	cfg, err := config.ReadJSON(b)
	if err != nil {
		return config.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return config.Config{}, err
	}
	cfg.Out, cfg.Name = filepath.Dir(abs), filepath.Base(abs)
	return cfg, nil
}
