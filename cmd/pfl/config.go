package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"pfl/configs"
	"pfl/engine/config"
	"pfl/internal/suggest"
)

// setFlags collects repeatable --set key=value overrides.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// loadConfig reads an experiment config as pfl train does: the file at path (YAML, or JSON
// for a run's config.json; empty: the embedded demo; a name: a built-in config), then the
// PFL_* environment variables, then the --set overrides (config.Load).
func loadConfig(path string, sets []string) (config.Config, error) {
	cfg, _, err := loadConfigSources(path, sets)
	return cfg, err
}

// loadConfigSources is loadConfig that also says where each key's value came from.
func loadConfigSources(path string, sets []string) (config.Config, config.Origins, error) {
	src, where, err := configSource(path)
	if err != nil {
		return config.Config{}, nil, err
	}
	return config.Load(config.Sources{File: src, Where: where, JSON: strings.HasSuffix(path, ".json"), Env: os.Environ(), Sets: sets})
}

// configSource reads the config file at path: the embedded demo for "", else the file, or,
// when no such file exists and path names no folder, the embedded config of that name (with
// or without .yaml), so `-c quickstart-fmnist` works from any directory. where names it for
// messages.
func configSource(path string) (src []byte, where string, err error) {
	if path == "" {
		src, err = configs.Files.ReadFile(configs.Demo)
		return src, "the built-in demo " + configs.Demo, err
	}
	src, err = config.ReadFile(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) || strings.ContainsRune(path, os.PathSeparator) {
		return src, path, err
	}
	for _, name := range []string{path, path + ".yaml"} {
		if b, embedErr := configs.Files.ReadFile(name); embedErr == nil {
			return b, "the built-in config " + name, nil
		}
	}
	return nil, path, fmt.Errorf("%w; no built-in config is named %s either%s (pfl configs lists them)", err, path, suggest.DidYouMean(strings.TrimSuffix(path, ".yaml"), builtinNames()))
}
