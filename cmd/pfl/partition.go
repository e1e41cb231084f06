package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"pfl/engine/data"
	"pfl/engine/data/fetch"
	"pfl/engine/experiment"
)

// checkPartitionFlags refuses values no partition can use, naming the flag.
func checkPartitionFlags(c data.PartitionConfig) error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case c.Clients < 1:
		return fmt.Errorf("-clients %d: want >= 1", c.Clients)
	case !finite(c.Alpha) || c.Alpha <= 0:
		return fmt.Errorf("-alpha %g: want a finite value > 0", c.Alpha)
	case c.ClassesPerClient < 1:
		return fmt.Errorf("-k %d: want >= 1", c.ClassesPerClient)
	case c.MinSize < 1:
		return fmt.Errorf("-min-size %d: want >= 1", c.MinSize)
	case !finite(c.HoldOut) || c.HoldOut < 0 || c.HoldOut >= 1:
		return fmt.Errorf("-holdout %g: want a fraction in [0, 1)", c.HoldOut)
	case !finite(c.NoiseMax) || c.NoiseMax < 0:
		return fmt.Errorf("-noise %g: want a finite value >= 0", c.NoiseMax)
	}
	return nil
}

// partitionCmd spreads a dataset over clients and writes the manifest and heatmap.
func partitionCmd(args []string, out io.Writer) error {
	fs := newFlags("partition", out)
	spec := fs.String("data", "fashion-mnist", "dataset: fashion-mnist[:dir], mnist:dir, cifar10:path, cifar100:path, organamnist:file.npz, officehome:dir, domains:dir, rsna:dir[:side], kermany:dir[:side], kermany-binary:dir[:side], synthetic[:n]")
	var cfg data.PartitionConfig
	method := fs.String("method", "dirichlet", "iid, dirichlet, pathological, pachinko, domain-dirichlet or coarse-groups")
	convention := fs.String("convention", "fedtp", "fedtp (test split from the test set) or fedperfix (merge, then 75/25 per client)")
	fs.IntVar(&cfg.Clients, "clients", 50, "number of clients")
	fs.Float64Var(&cfg.Alpha, "alpha", 0.5, "Dirichlet concentration (dirichlet, domain-dirichlet, pachinko)")
	fs.IntVar(&cfg.ClassesPerClient, "k", 2, "classes per client (pathological)")
	fs.IntVar(&cfg.MinSize, "min-size", 10, "minimum samples per client (dirichlet)")
	fs.Float64Var(&cfg.HoldOut, "holdout", 0, "fraction of clients held out as novel clients")
	fs.Float64Var(&cfg.NoiseMax, "noise", 0, "feature imbalance: client i gets noise std noise·i/(N-1)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed")
	dir := fs.String("out", "runs/partition", "folder for partition.json and partition.png (and .svg)")
	path := fs.String("c", "", "export the partition a run of this config (one seed) trains on, as indices into the dataset's files (clients.json beside partition.json); the flags above come from the config then")
	var sets setFlags
	fs.Var(&sets, "set", "with -c: override a config key, e.g. --set seed=2 (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path != "" {
		return exportPartition(fs, *path, sets, *dir, out)
	}
	if len(sets) > 0 {
		return fmt.Errorf("--set overrides a config's key; give the config with -c")
	}
	cfg.Method, cfg.Convention = data.Method(*method), data.Convention(*convention)
	if err := checkPartitionFlags(cfg); err != nil {
		return err
	}
	resolved, err := fetch.Resolve(context.Background(), *spec, false, fetch.Options{Progress: out})
	if err != nil {
		return err
	}
	sp, err := data.Open(resolved)
	if err != nil {
		return err
	}
	f, err := sp.Partition(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	if err := f.WriteManifest(*dir); err != nil {
		return err
	}
	m := f.Manifest()
	small, large := f.Train.N, 0
	for _, p := range f.Part.Train {
		small, large = min(small, len(p)), max(large, len(p))
	}
	fmt.Fprintf(out, "%s: %d train / %d test images, %d classes\n", *spec, f.Train.N, f.Test.N, f.Train.Classes)
	fmt.Fprintf(out, "%s (%s), %d clients: %d to %d train samples per client\n", cfg.Method, cfg.Convention, cfg.Clients, small, large)
	fmt.Fprintf(out, "hash %s\n", m.Hash)
	fmt.Fprintf(out, "wrote %s and %s (and .svg)\n", filepath.Join(*dir, "partition.json"), filepath.Join(*dir, "partition.png"))
	return nil
}

// exportPartition writes the partition a run of the config at path trains on (the manifest
// and clients.json, experiment.ExportPartition); the partition's own flags (other than
// -out) are the config's data keys then, and setting one is an error.
func exportPartition(fs *flag.FlagSet, path string, sets []string, dir string, out io.Writer) error {
	var clash []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "c" && f.Name != "set" && f.Name != "out" {
			clash = append(clash, "-"+f.Name)
		}
	})
	if len(clash) > 0 {
		return fmt.Errorf("-c takes the partition from the config; drop %s (or --set data.* keys)", strings.Join(clash, ", "))
	}
	cfg, err := loadConfig(path, sets)
	if err != nil {
		return err
	}
	ctx, stop := interruptible(out)
	defer stop()
	e, err := experiment.ExportPartition(ctx, cfg, dir)
	if err != nil {
		return err
	}
	small, large := -1, 0
	for _, c := range e.Clients {
		if small < 0 || len(c.Train) < small {
			small = len(c.Train)
		}
		large = max(large, len(c.Train))
	}
	fmt.Fprintf(out, "%s, seed %d (%s convention), %d clients: %d to %d train samples per client\n", e.Dataset, e.Seed, e.Convention, len(e.Clients), small, large)
	fmt.Fprintf(out, "hash %s\n", e.Hash)
	fmt.Fprintf(out, "wrote %s, %s (and .svg) and %s\n", filepath.Join(dir, "partition.json"), filepath.Join(dir, "partition.png"), filepath.Join(dir, experiment.ClientsFile))
	return nil
}
