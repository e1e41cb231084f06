package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pfl/engine/analysis"
	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/rundir"
)

// TestEmbeddingTSNE: a run directory whose coarse-groups partition puts 4 groups of 6
// clients on disjoint classes, and whose embeddings cluster by group, gets a t-SNE whose
// groups stay separated (every client's 3 nearest neighbours in its group) and a plot.
func TestEmbeddingTSNE(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	cfg := config.Default().Resolved()
	cfg.Seed = 5
	if err := rundir.WriteJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	const groups, per, classes = 4, 6, 8
	m := data.Manifest{Config: data.PartitionConfig{Method: data.MethodCoarseGroups, Clients: groups * per}, Classes: classes}
	r := rand.New(rand.NewPCG(1, 2))
	var csvText strings.Builder
	csvText.WriteString("client,novel,z0,z1,z2,z3,z4,z5\n")
	for c := 0; c < groups*per; c++ {
		g := c / per
		row := make([]int, classes)
		row[2*g], row[2*g+1] = 5+c, 7 // each group its two classes
		m.TrainCount = append(m.TrainCount, row)
		fmt.Fprintf(&csvText, "%d,%t", c, c == 5)
		for j := 0; j < 6; j++ {
			v := 0.3 * r.NormFloat64()
			if j == g {
				v += 3
			}
			fmt.Fprintf(&csvText, ",%g", v)
		}
		csvText.WriteString("\n")
	}
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, "partition.json"), b, 0o644)
	os.WriteFile(filepath.Join(dir, "embeddings.csv"), []byte(csvText.String()), 0o644)
	if err := EmbeddingTSNE(dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "embeddings_tsne.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != groups*per+1 {
		t.Fatalf("embeddings_tsne.csv: %d rows (%v)", len(rows), err)
	}
	var y []float64
	var labels []int
	for i, row := range rows[1:] {
		g, _ := strconv.Atoi(row[2])
		if g != i/per || row[1] != strconv.FormatBool(i == 5) {
			t.Fatalf("row %v: group %d, want %d", row, g, i/per)
		}
		a, _ := strconv.ParseFloat(row[3], 64)
		b, _ := strconv.ParseFloat(row[4], 64)
		y, labels = append(y, a, b), append(labels, g)
	}
	if p := analysis.KNNPurity(y, len(labels), 2, labels, 3); p < 0.99 {
		t.Fatalf("3-NN purity of the groups %v", p)
	}
	for _, ext := range []string{"png", "svg"} {
		if st, err := os.Stat(filepath.Join(dir, "embeddings_tsne."+ext)); err != nil || st.Size() == 0 {
			t.Fatalf("embeddings_tsne.%s: %v", ext, err)
		}
	}
	// without groups: one colour, group −1
	m.Config.Method = data.MethodDirichlet
	b, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(dir, "partition.json"), b, 0o644)
	if err := EmbeddingTSNE(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "embeddings_tsne.csv")); !strings.Contains(string(b), "\n0,false,-1,") {
		t.Fatalf("ungrouped table:\n%s", b)
	}
}
