package experiment

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"pfl/engine/analysis"
	"pfl/engine/data"
	"pfl/engine/internal/atomicfile"
	"pfl/engine/internal/chart"
)

// Embeddings are a run's client embeddings (embeddings.csv).
type Embeddings struct {
	Clients []int       // the client of each row
	Novel   []bool      // whether it was held out of training
	Z       [][]float64 // its embedding
}

// ReadEmbeddings reads dir/embeddings.csv (client, novel, z0, z1, ...).
func ReadEmbeddings(dir string) (*Embeddings, error) {
	path := filepath.Join(dir, "embeddings.csv")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 2 || len(rows[0]) < 3 || rows[0][0] != "client" || rows[0][1] != "novel" {
		return nil, fmt.Errorf("%s: want a header client,novel,z0,... and a row per client", path)
	}
	e := &Embeddings{}
	for i, r := range rows[1:] {
		c, err := strconv.Atoi(r[0])
		novel, err2 := strconv.ParseBool(r[1])
		if err != nil || err2 != nil {
			return nil, fmt.Errorf("%s: row %d: bad client or novel field", path, i+2)
		}
		z := make([]float64, len(r)-2)
		for j, s := range r[2:] {
			v, err := strconv.ParseFloat(s, 64)
			switch {
			case err != nil:
				return nil, fmt.Errorf("%s: row %d, column %s: %q is not a number", path, i+2, rows[0][j+2], s)
			case math.IsNaN(v) || math.IsInf(v, 0):
				// a diverged hypernetwork's embeddings: t-SNE has no distance to work with
				return nil, fmt.Errorf("%s: row %d (client %d), column %s: %s is not a finite number (did the run diverge?)", path, i+2, c, rows[0][j+2], s)
			}
			z[j] = v
		}
		e.Clients, e.Novel, e.Z = append(e.Clients, c), append(e.Novel, novel), append(e.Z, z)
	}
	return e, nil
}

// clientGroups is each client's coarse group when the run's partition (dir/partition.json)
// has one — the coarse-groups partition, whose clients of one coarse class hold exactly its
// fine classes: clients are grouped by the set of classes they train on, numbered in order
// of first appearance — and nil otherwise.
func clientGroups(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "partition.json"))
	if err != nil {
		return nil, err
	}
	var m data.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "partition.json"), err)
	}
	if m.Config.Method != data.MethodCoarseGroups {
		return nil, nil
	}
	ids := map[string]int{}
	var out []int
	for _, row := range m.TrainCount {
		var key strings.Builder
		for c, n := range row {
			if n > 0 {
				fmt.Fprintf(&key, "%d,", c)
			}
		}
		g, ok := ids[key.String()]
		if !ok {
			g = len(ids)
			ids[key.String()] = g
		}
		out = append(out, g)
	}
	return out, nil
}

// maxTSNEClients is the most clients a t-SNE gives a colour and legend entry each: past
// that, colours repeat and cannot tell clients apart.
var maxTSNEClients = len(chart.Categorical)

// EmbeddingTSNE draws the t-SNE of a run's client embeddings (FedTP Fig. 9, TransFed
// Fig. 4) from dir/embeddings.csv: dir/embeddings_tsne.{png,svg}, a colour per client
// (up to maxTSNEClients; more: a colour per coarse group) and a marker shape per coarse
// group when the partition has one, novel clients as crosses, the legend beside the map, and the coordinates in
// dir/embeddings_tsne.csv (client, novel, group, x, y; group −1 without groups). The
// layout is seeded by the run's seed. A run without embeddings.csv is an error.
func EmbeddingTSNE(dir string) error {
	if err := notAGrid(dir, "pfl tsne"); err != nil {
		return err
	}
	cfg, err := LoadRunConfig(dir)
	if err != nil {
		return err
	}
	e, err := ReadEmbeddings(dir)
	if err != nil {
		return err
	}
	groups, err := clientGroups(dir)
	if err != nil {
		return err
	}
	n, d := len(e.Z), len(e.Z[0])
	if n < 2 {
		return fmt.Errorf("%s: %d client, but a t-SNE places at least 2 clients relative to each other", filepath.Join(dir, "embeddings.csv"), n)
	}
	x := make([]float64, 0, n*d)
	for _, z := range e.Z {
		if len(z) != d {
			return fmt.Errorf("%s: rows of %d and %d values", filepath.Join(dir, "embeddings.csv"), d, len(z))
		}
		x = append(x, z...)
	}
	y, err := analysis.TSNE(x, n, d, analysis.TSNEOptions{Seed: cfg.Seed})
	if err != nil {
		return err
	}
	group := func(i int) int {
		if c := e.Clients[i]; groups != nil && c < len(groups) {
			return groups[c]
		}
		return -1
	}
	var table strings.Builder
	table.WriteString("client,novel,group,x,y\n")
	for i, c := range e.Clients {
		fmt.Fprintf(&table, "%d,%t,%d,%s,%s\n", c, e.Novel[i], group(i), strconv.FormatFloat(y[2*i], 'g', -1, 64), strconv.FormatFloat(y[2*i+1], 'g', -1, 64))
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, "embeddings_tsne.csv"), []byte(table.String())); err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: t-SNE of the client embeddings", cfg.Name)
	p.X.Label.Text, p.Y.Label.Text = "t-SNE 1 (no unit)", "t-SNE 2 (no unit)"
	// few clients: a colour each, named in the legend, the coarse group as the marker's
	// shape; many: a colour per coarse group, as the papers' figures
	perClient := n <= maxTSNEClients
	type key struct{ client, group, novel int }
	byKey := map[key]plotter.XYs{}
	var keys []key
	for i, c := range e.Clients {
		k := key{-1, group(i), 0}
		if perClient {
			k.client = c
		}
		if e.Novel[i] {
			k.novel = 1
		}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], plotter.XY{X: y[2*i], Y: y[2*i+1]})
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.group != b.group {
			return a.group - b.group
		}
		if a.client != b.client {
			return a.client - b.client
		}
		return a.novel - b.novel
	})
	for ci, k := range keys {
		pts := chart.Points(byKey[k]) // the CSV keeps a coordinate that cannot be drawn
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Radius = vg.Points(3.5)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Color = plotutil.Color(max(k.group, 0))
		var name string
		if perClient {
			sc.GlyphStyle.Color = chart.Categorical[ci%len(chart.Categorical)]
			name = fmt.Sprintf("client %d", k.client)
		}
		if k.group >= 0 {
			if perClient {
				sc.GlyphStyle.Shape = plotutil.Shape(k.group)
				name += ", "
			}
			name += fmt.Sprintf("group %d", k.group)
		}
		if name == "" {
			name = "clients"
		}
		if k.novel == 1 {
			sc.GlyphStyle.Shape = draw.CrossGlyph{}
			name += " (novel)"
		}
		p.Add(sc)
		if len(keys) <= 24 {
			p.Legend.Add(name, sc)
		}
	}
	chart.Pad(p, 0.05)
	// clients fill the whole map: the legend goes beside it
	chart.LegendOutside(p, 6*vg.Inch, 5*vg.Inch)
	for _, ext := range []string{"png", "svg"} {
		if err := chart.Save(p, 6*vg.Inch, 5*vg.Inch, filepath.Join(dir, "embeddings_tsne."+ext)); err != nil {
			return err
		}
	}
	return nil
}
