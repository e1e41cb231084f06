package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"pfl/engine/data"
)

// partitionCmd spreads a dataset over clients and writes the manifest and heatmap.
func partitionCmd(args []string, out io.Writer) error {
	fs := newFlags("partition", out)
	spec := fs.String("data", "fashion-mnist", "dataset: fashion-mnist[:dir], mnist:dir, cifar10:path, cifar100:path, organamnist:file.npz, synthetic[:n]")
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
	dir := fs.String("out", "runs/partition", "folder for partition.json and partition.png")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.Method, cfg.Convention = data.Method(*method), data.Convention(*convention)
	sp, err := data.Open(*spec)
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
	fmt.Fprintf(out, "wrote %s and %s\n", filepath.Join(*dir, "partition.json"), filepath.Join(*dir, "partition.png"))
	return nil
}
