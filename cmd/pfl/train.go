package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"pfl/configs"
	"pfl/engine/experiment"
)

// setFlags collects repeatable --set key=value overrides.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// loadConfig reads an experiment config: the YAML file (or the embedded demo),
// then PFL_* environment variables (PFL_TRAIN_ROUNDS=10), then --set overrides, decoded into
// the typed struct; an unknown key is an error naming it.
func loadConfig(path string, sets []string) (experiment.Config, error) {
	var cfg experiment.Config
	v := viper.New()
	v.SetConfigType("yaml")
	v.SetEnvPrefix("PFL")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	var src []byte
	var err error
	if path == "" {
		src, err = configs.Files.ReadFile(configs.Demo)
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		return cfg, err
	}
	if err := v.ReadConfig(bytes.NewReader(src)); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range sets {
		key, val, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return cfg, fmt.Errorf("--set %q: want key=value, e.g. train.rounds=10", s)
		}
		v.Set(key, setValue(val))
	}
	err = v.Unmarshal(&cfg, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true      // a misspelt key is an error, not a silent default
		dc.WeaklyTypedInput = true // --set values arrive as strings
	})
	if err != nil {
		where := path
		if where == "" {
			where = "the demo"
		}
		return cfg, fmt.Errorf("config (%s): %w", where, err)
	}
	return cfg, nil
}

// setValue reads a --set value: "[a, b]" is a list (suite, algorithm.generate, novel.tune),
// anything else a string that decoding converts to the key's type.
func setValue(val string) any {
	inner, ok := strings.CutPrefix(val, "[")
	if inner, ok2 := strings.CutSuffix(inner, "]"); ok && ok2 {
		items := []string{}
		for _, it := range strings.Split(inner, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		return items
	}
	return val
}

// trainCmd runs an experiment.
func trainCmd(args []string, out io.Writer) error {
	fs := newFlags("train", out)
	path := fs.String("c", "", "experiment config (YAML); empty: the built-in demo ("+configs.Demo+")")
	var sets setFlags
	fs.Var(&sets, "set", "override a key, e.g. --set train.rounds=5 (repeatable)")
	resume := fs.String("resume", "", "continue the run in this run directory from its last checkpoint")
	if err := parse(fs, args); err != nil {
		return err
	}
	// SIGINT/SIGTERM finish the round in progress, save a checkpoint and stop.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var res *experiment.Result
	if *resume != "" {
		if *path != "" || len(sets) > 0 {
			return fmt.Errorf("--resume continues a run with its own config; drop -c and --set")
		}
		r, err := experiment.Resume(ctx, *resume, observer(out))
		if err != nil {
			return err
		}
		res = r
	} else {
		cfg, err := loadConfig(*path, sets)
		if err != nil {
			return err
		}
		if len(cfg.Suite) > 0 {
			sr, err := experiment.RunSuite(ctx, cfg, observer(out))
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "\n%s\nresults: %s\nplot: %s\n", sr.Table,
				filepath.Join(sr.Dir, "results.md"), filepath.Join(sr.Dir, "accuracy.png"))
			return nil
		}
		if res, err = experiment.Run(ctx, cfg, observer(out)); err != nil {
			return err
		}
	}
	s := res.Summary
	fmt.Fprintf(out, "\n%s: %d rounds in %.1f s (%.0f samples/s)\n", s.Name, s.Rounds, s.WallSeconds, s.SamplesPerSec)
	fmt.Fprintf(out, "final accuracy %.4f; per client %.4f ± %.4f (p10 %.3f, median %.3f, p90 %.3f, worst 10%% %.3f)\n",
		s.FinalMicro, s.FinalMean, s.FinalStd, s.P10, s.P50, s.P90, s.Worst10)
	fmt.Fprintf(out, "accuracy over the last %d evaluations %.4f ± %.4f\n", s.TailEvals, s.TailMean, s.TailStd)
	fmt.Fprintf(out, "run directory: %s\n", res.Dir)
	return nil
}
