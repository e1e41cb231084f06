package experiment

import (
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// TestMaps trains a toy suite (FedTP and FedAvg on a 2-block tiny ViT, Ditto, TransFed on a
// FocalNet) and draws its maps for two clients: a sheet per client with a row of inputs
// and a row per member that has maps, the same test images (the clients' first ones) for
// every member, and Ditto listed as skipped.
func TestMaps(t *testing.T) {
	cfg := filled(config.Config{Name: "maps", Out: mapsOut(t),
		Suite:     []string{"fedtp", "fedavg", "ditto", "transfed: algorithm.name=transfed; model.preset=focalnet-cifar; model.heads=null; model.head_dim=null; model.mlp=null"},
		Data:      config.Data{Dataset: "synthetic:200", Clients: 5, Partition: "pathological", ClassesPerClient: 2},
		Model:     config.Model{Preset: "tiny-vit", Depth: new(int64(2))},
		Algorithm: fl.Settings{Hyper: fl.HyperSettings{Embed: ptr(int64(8)), Hidden: ptr(int64(16))}},
		Train:     config.Train{Rounds: 2, Participation: 0.5, Batch: 16, LR: 0.05, EvalEvery: 1}})
	res, err := RunSuite(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "fedtp", "embeddings_tsne.png")); err != nil {
		t.Errorf("fedtp's t-SNE: %v", err)
	}
	info, err := Maps(res.Dir, MapOptions{Images: 3, Clients: []int{1, 3}, Side: 64})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, m := range info.Members {
		kinds[m.Name] = m.Kind
		if m.Name == "ditto" && m.Skipped == "" {
			t.Error("ditto was drawn through the model it does not predict with")
		}
	}
	if kinds["fedtp"] != "rollout" || kinds["fedavg"] != "rollout" || kinds["transfed"] != "focal" {
		t.Fatalf("members %+v", info.Members)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "maps", "maps.json"))
	if err != nil {
		t.Fatal(err)
	}
	var saved report.MapsInfo
	if err := json.Unmarshal(b, &saved); err != nil || !slices.Equal(saved.Clients, []int{1, 3}) || len(saved.Sheets) != 2 ||
		saved.Discard != 0.3 || saved.Fusion != "max" {
		t.Fatalf("maps.json %s (%v)", b, err)
	}
	first, err := rundir.LoadConfig(res.Runs[0].Dir)
	if err != nil {
		t.Fatal(err)
	}
	se, err := prepare(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	fed := se.run.Federated()
	for i, c := range saved.Clients {
		// one image of each class first, as many classes as the client has up to 3
		want := classSpread(fed.Part.Test[c], fed.Test.Labels, 3)
		classes, shown := map[int64]bool{}, map[int64]bool{}
		for _, j := range fed.Part.Test[c] {
			classes[fed.Test.Labels[j]] = true
		}
		for _, j := range saved.Images[i] {
			shown[fed.Test.Labels[j]] = true
		}
		if !slices.Equal(saved.Images[i], want) || len(shown) != min(3, len(classes)) {
			t.Errorf("client %d: images %v of %d classes, want %v (%d classes)", c, saved.Images[i], len(shown), want, min(3, len(classes)))
		}
	}
	se.close()
	for _, name := range saved.Sheets {
		f, err := os.Open(filepath.Join(res.Dir, "maps", name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		// 32-pixel images magnified twice: 4 rows (inputs, fedtp, fedavg, transfed), 3
		// columns; each map captioned with its prediction (17 pixels), the colour bar under
		// the sheet with its label (30 and 13 a line)
		if b := img.Bounds(); b.Dy() < 4*64+3*17+43 || b.Dy() > 4*64+60+3*17+30+13*8 || b.Dx() < 3*64 {
			t.Errorf("%s: %v", name, b)
		}
	}
	if _, err := Maps(res.Dir, MapOptions{Clients: []int{9}}); err == nil {
		t.Error("client 9 of 5 drawn")
	}
}

// mapsOut is the test's output folder: PFL_MAPS_OUT keeps the maps to look at.
func mapsOut(t *testing.T) string {
	if d := os.Getenv("PFL_MAPS_OUT"); d != "" {
		os.RemoveAll(filepath.Join(d, "maps"))
		return d
	}
	return t.TempDir()
}
