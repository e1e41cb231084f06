package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/data/fetch"
)

// ClientsFile is the name of the file ExportPartition writes beside the manifest.
const ClientsFile = "clients.json"

// PartitionExport is the exact partition a run trains on, as indices into the dataset's
// own files, so that other code can train on the same client data (scripts/sbs converts it
// to PFLlib's per-client files). Indices count in one space: the dataset's training split
// first (0 … TrainImages−1), then its test split (TrainImages … TrainImages+TestImages−1),
// each in its files' order.
type PartitionExport struct {
	Dataset     string        `json:"dataset"`      // data.dataset, resolved to where it was read
	Convention  string        `json:"convention"`   // data.convention
	Seed        uint64        `json:"seed"`         // the run's seed (subsets and partition)
	Hash        string        `json:"hash"`         // the manifest's (partition.json) hash of the assignment
	TrainImages int           `json:"train_images"` // the dataset's training split's size
	TestImages  int           `json:"test_images"`  // its test split's
	Classes     int           `json:"classes"`
	Novel       []int         `json:"novel,omitempty"` // clients held out of training
	Clients     []ClientSplit `json:"clients"`
}

// ClientSplit is one client's training and test images, with their labels (a reader checks
// its own labels against them).
type ClientSplit struct {
	Train       []int   `json:"train"`
	Test        []int   `json:"test"`
	TrainLabels []int64 `json:"train_labels"`
	TestLabels  []int64 `json:"test_labels"`
}

// presentationKeys are the data keys that change how the images look to the model, not which
// images a client holds: padding is applied to every image before the partition, which reads
// only labels and counts, and the channel count at upload, after it. A suite member may set
// them and still train on the suite's partition (PFLlib's Digit5CNN beside its FedAvgCNN).
var presentationKeys = []string{"data.pad_to", "data.channels"}

// ExportPartition builds the partition a run of cfg (one run, or a grid of one sweep point
// and one seed; a suite's members share it unless one sets the seed or a data key other
// than presentationKeys) trains on, through the same data stage as the run, and writes its
// manifest (partition.json, partition.png) and the clients' indices (clients.json) to dir.
// Text datasets and feature noise have no such export.
func ExportPartition(ctx context.Context, cfg config.Config, dir string) (PartitionExport, error) {
	var out PartitionExport
	cfg = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		return out, err
	}
	for _, e := range cfg.Suite {
		keys, err := config.MemberKeys(e)
		if err != nil {
			return out, err
		}
		for _, k := range keys {
			if k == "seed" || strings.HasPrefix(k, "data.") && !slices.Contains(presentationKeys, k) {
				return out, fmt.Errorf("suite member %q sets %s: its partition is not the suite's", e, k)
			}
		}
	}
	if cfg.IsGrid() {
		one, err := onePartition(cfg)
		if err != nil {
			return out, err
		}
		cfg = one
	}
	spec, err := fetch.Resolve(ctx, cfg.Data.Dataset, cfg.Data.Download, fetch.Options{Progress: os.Stderr})
	if err != nil {
		return out, fmt.Errorf("data.dataset: %w", err)
	}
	cfg.Data.Dataset = spec
	if data.IsText(spec) {
		return out, fmt.Errorf("data.dataset %s: only image datasets can be exported", spec)
	}
	if cfg.Data.Noise > 0 {
		return out, fmt.Errorf("data.noise: the clients' noise is drawn in training; a partition with it cannot be exported")
	}
	im, err := loadImages(cfg)
	if err != nil {
		return out, err
	}
	fed, err := im.sp.Partition(cfg.Partition())
	if err != nil {
		return out, fmt.Errorf("data.partition: %w", err)
	}
	// where fed.Train's and fed.Test's images lie in the one index space
	origin := func(kept []int, offset int) []int {
		o := make([]int, len(kept))
		for i, k := range kept {
			o[i] = offset + k
		}
		return o
	}
	trainOrigin, testOrigin := origin(im.kept[0], 0), origin(im.kept[1], im.full[0])
	if fed.Test == fed.Train { // the fedperfix convention partitions the pool train ++ test
		trainOrigin = append(trainOrigin, testOrigin...)
		testOrigin = trainOrigin
	}
	if len(trainOrigin) != fed.Train.N || len(testOrigin) != fed.Test.N {
		return out, fmt.Errorf("export: %d and %d origins for %d and %d images", len(trainOrigin), len(testOrigin), fed.Train.N, fed.Test.N)
	}
	out = PartitionExport{Dataset: spec, Convention: string(fed.Config.Convention), Seed: cfg.Seed, Hash: fed.Manifest().Hash,
		TrainImages: im.full[0], TestImages: im.full[1], Classes: fed.Train.Classes, Novel: fed.Part.Novel}
	pick := func(parts []int, origin []int, x *data.Images) ([]int, []int64) {
		idx, labels := make([]int, len(parts)), make([]int64, len(parts))
		for i, p := range parts {
			idx[i], labels[i] = origin[p], x.Labels[p]
		}
		return idx, labels
	}
	for c := range fed.Part.Train {
		var cs ClientSplit
		cs.Train, cs.TrainLabels = pick(fed.Part.Train[c], trainOrigin, fed.Train)
		cs.Test, cs.TestLabels = pick(fed.Part.Test[c], testOrigin, fed.Test)
		out.Clients = append(out.Clients, cs)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, err
	}
	if err := fed.WriteManifest(dir); err != nil {
		return out, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return out, err
	}
	if err := os.WriteFile(filepath.Join(dir, ClientsFile), b, 0o644); err != nil {
		return out, fmt.Errorf("export: %w", err)
	}
	return out, nil
}

// onePartition is the config of the one run of a grid that has one sweep point and one
// seed (a swept config narrowed by --set to one value and one seed): the grid's own
// expansion, so the export draws what that run trains on. Its members share the partition
// (the caller has checked that none sets a data key or the seed). A larger grid is an
// error that says how to narrow it.
func onePartition(cfg config.Config) (config.Config, error) {
	g, err := config.NewGrid(cfg)
	if err != nil {
		return cfg, err
	}
	if len(g.Points) != 1 || len(g.Seeds) != 1 {
		return cfg, fmt.Errorf("%d sweep point(s) and %d seed(s) make several partitions; export one run's: --set 'seeds=[S]' and one value of each swept key (--set 'sweep.KEY=[V]')",
			len(g.Points), len(g.Seeds))
	}
	return g.Runs[0].Config, nil
}
