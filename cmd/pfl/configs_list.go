package main

import (
	"fmt"
	"io"
	"io/fs"
	"strings"

	"pfl/configs"
	"pfl/engine/config"
)

// configsCmd lists the built-in configs (configs/*.yaml, embedded in the binary): each
// one's name for -c, then what it runs on which data and model, then what it is (about),
// wrapped to the terminal's width (80 columns off a terminal). `pfl train -c NAME` runs one
// from any directory.
func configsCmd(args []string, out io.Writer) error {
	flags := newFlags("configs", out)
	if err := parse(flags, args); err != nil {
		return err
	}
	names, err := fs.Glob(configs.Files, "*.yaml")
	if err != nil {
		return err
	}
	width := termWidth(out)
	for _, file := range names {
		cfg, err := loadConfig(file, nil)
		if err != nil {
			return fmt.Errorf("built-in config %s: %w", file, err)
		}
		src, err := configs.Files.ReadFile(file)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(file, ".yaml")
		if file == configs.Demo {
			name += " (default)"
		}
		fmt.Fprintln(out, name)
		writeWrapped(out, width, "    ", fmt.Sprintf("%s, %s, %d rounds: %s", cfg.Data.Dataset, cfg.Model.Preset, cfg.Train.Rounds, configRuns(cfg)), 6)
		if a := about(src); a != "" {
			writeWrapped(out, width, "    ", a, 4)
		}
	}
	fmt.Fprintln(out)
	writeWrapped(out, width, "", "Run one with pfl train -c NAME (from any directory); pfl train -c NAME --print-config shows every key.", 0)
	return nil
}

// configRuns says what a config runs: its algorithm or suite members, times its seeds and
// sweep.
func configRuns(cfg config.Config) string {
	runs := cfg.Algorithm.Name
	if len(cfg.Suite) > 0 {
		runs = strings.Join(config.MemberLabels(cfg.Suite), ", ")
	}
	if len(cfg.Seeds) > 0 {
		runs += fmt.Sprintf(" × %d seeds", len(cfg.Seeds))
	}
	if len(cfg.Sweep) > 0 {
		var keys []string
		for _, a := range cfg.Sweep {
			keys = append(keys, a.Key)
		}
		runs += " × sweep of " + strings.Join(keys, ", ")
	}
	return runs
}

// builtinNames are the built-in configs' names (without .yaml), for a "did you mean".
func builtinNames() []string {
	files, _ := fs.Glob(configs.Files, "*.yaml")
	for i, f := range files {
		files[i] = strings.TrimSuffix(f, ".yaml")
	}
	return files
}
