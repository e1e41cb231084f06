package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// TestOverwriteReplacesEverythingPflWrites: a suite with every output pfl writes (a FedTP
// member's embeddings and t-SNE, a local member for the gain density, novel clients, maps,
// the reports) and a grid (sweep, seeds, per-client plots) are replaceable as they are;
// one file pfl did not write anywhere in them, or a folder without config.json, is not.
func TestOverwriteReplacesEverythingPflWrites(t *testing.T) {
	out := t.TempDir()
	cfg := filled(config.Config{Name: "suite", Out: out, Suite: []string{"fedtp", "local"},
		Data:      config.Data{Dataset: "synthetic:800", Clients: 8, Partition: "iid", HoldOut: 0.25},
		Model:     config.Model{Preset: "tiny-vit", Depth: ptr(int64(1)), Patch: ptr(int64(8)), Dim: ptr(int64(16)), Heads: ptr(int64(2)), HeadDim: ptr(int64(8)), MLP: ptr(int64(32))},
		Algorithm: fl.Settings{Hyper: fl.HyperSettings{Embed: ptr(int64(8)), Hidden: ptr(int64(16))}},
		Train:     config.Train{Rounds: 1, Participation: 0.5, Batch: 32, LR: 0.05, EvalEvery: 1},
		Novel:     config.Novel{Epochs: 1}})
	res, err := RunSuite(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Maps(res.Dir, MapOptions{}); err != nil {
		t.Fatal(err)
	}
	g := smallGrid(out, "grid")
	g.Train.Rounds = 1
	if _, err := RunGrid(context.Background(), g, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{res.Dir, filepath.Join(out, "grid")} {
		if _, err := report.Write(dir); err != nil {
			t.Fatal(err)
		}
		if err := rundir.Owned(dir); err != nil {
			t.Fatalf("pfl's own outputs: %v", err)
		}
	}
	for _, f := range []string{"fedtp/embeddings_tsne.png", "gain_density.png", "novel.png", "maps/maps.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("the suite lacks an output the test means to cover: %v", err)
		}
	}
	foreign := filepath.Join(res.Dir, "fedtp", "maps-notes.md")
	if err := os.WriteFile(foreign, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rundir.Owned(res.Dir); err == nil || !strings.Contains(err.Error(), foreign) {
		t.Fatalf("a file pfl did not write: %v", err)
	}
	if _, err := RunSuiteWith(context.Background(), cfg, Options{Overwrite: true}); err == nil {
		t.Fatal("the suite was overwritten over a file pfl did not write")
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatalf("overwriting deleted %s: %v", foreign, err)
	}
	empty := filepath.Join(out, "nopfl")
	if err := os.MkdirAll(filepath.Join(empty, "tb"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "summary.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rundir.Owned(empty); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Fatalf("a folder without config.json: %v", err)
	}
}
