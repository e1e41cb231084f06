package report

import (
	"encoding/json"
	"fmt"
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
	"pfl/engine/rundir"
)

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

// maxTSNELabels is the most clients a t-SNE writes the number of next to its point.
const maxTSNELabels = 64

// tsneLayout is a run's client embeddings placed in the plane: each row's client, whether
// it is novel, its coarse group (−1 without groups) and its two coordinates.
type tsneLayout struct {
	e     *rundir.Embeddings
	group []int
	xy    []float64 // x0, y0, x1, y1, ...
}

// EmbeddingTSNE draws the t-SNE of a run's client embeddings (FedTP Fig. 9, TransFed
// Fig. 4) from dir/embeddings.csv: dir/embeddings_tsne.{png,svg}, a colour per client
// (up to maxTSNEClients; more: a colour per coarse group) and a marker shape per coarse
// group when the partition has one, novel clients as crosses, past that each point's client
// number beside it (up to maxTSNELabels), the legend beside the map, and the coordinates in
// dir/embeddings_tsne.csv (client, novel, group, x, y; group −1 without groups). The
// layout is seeded by the run's seed. A run without embeddings.csv is an error.
func EmbeddingTSNE(dir string) error {
	if err := rundir.NotAGrid(dir, "pfl tsne"); err != nil {
		return err
	}
	cfg, err := rundir.LoadConfig(dir)
	if err != nil {
		return err
	}
	t, err := placeEmbeddings(dir, cfg.Seed)
	if err != nil {
		return err
	}
	if err := t.writeCSV(filepath.Join(dir, "embeddings_tsne.csv")); err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: t-SNE of the client embeddings", cfg.Name)
	p.X.Label.Text, p.Y.Label.Text = "t-SNE 1 (no unit)", "t-SNE 2 (no unit)"
	if err := t.draw(p); err != nil {
		return err
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

// placeEmbeddings reads the run's embeddings and groups in dir and places them by t-SNE,
// seeded by seed.
func placeEmbeddings(dir string, seed uint64) (*tsneLayout, error) {
	e, err := rundir.ReadEmbeddings(dir)
	if err != nil {
		return nil, err
	}
	groups, err := clientGroups(dir)
	if err != nil {
		return nil, err
	}
	n, d := len(e.Z), len(e.Z[0])
	if n < 2 {
		return nil, fmt.Errorf("%s: %d client, but a t-SNE places at least 2 clients relative to each other", filepath.Join(dir, rundir.EmbeddingsFile), n)
	}
	x := make([]float64, 0, n*d)
	for _, z := range e.Z {
		if len(z) != d {
			return nil, fmt.Errorf("%s: rows of %d and %d values", filepath.Join(dir, rundir.EmbeddingsFile), d, len(z))
		}
		x = append(x, z...)
	}
	y, err := analysis.TSNE(x, n, d, analysis.TSNEOptions{Seed: seed})
	if err != nil {
		return nil, err
	}
	t := &tsneLayout{e: e, xy: y}
	for _, c := range e.Clients {
		g := -1
		if groups != nil && c < len(groups) {
			g = groups[c]
		}
		t.group = append(t.group, g)
	}
	return t, nil
}

// writeCSV writes the layout's coordinates to path.
func (t *tsneLayout) writeCSV(path string) error {
	var table strings.Builder
	table.WriteString("client,novel,group,x,y\n")
	for i, c := range t.e.Clients {
		fmt.Fprintf(&table, "%d,%t,%d,%s,%s\n", c, t.e.Novel[i], t.group[i], strconv.FormatFloat(t.xy[2*i], 'g', -1, 64), strconv.FormatFloat(t.xy[2*i+1], 'g', -1, 64))
	}
	return atomicfile.WriteBytes(path, []byte(table.String()))
}

// tsneKey is one series of a t-SNE figure: a client (−1 when colours go by group), a
// coarse group (−1 without groups), and novel or not.
type tsneKey struct{ client, group, novel int }

// series groups the layout's points by key: few clients, a colour each (named in the
// legend, the coarse group as the marker's shape); many, a colour per coarse group, as
// the papers' figures.
func (t *tsneLayout) series(perClient bool) ([]tsneKey, map[tsneKey]plotter.XYs) {
	byKey := map[tsneKey]plotter.XYs{}
	var keys []tsneKey
	for i, c := range t.e.Clients {
		k := tsneKey{-1, t.group[i], 0}
		if perClient {
			k.client = c
		}
		if t.e.Novel[i] {
			k.novel = 1
		}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], plotter.XY{X: t.xy[2*i], Y: t.xy[2*i+1]})
	}
	slices.SortFunc(keys, func(a, b tsneKey) int {
		if a.group != b.group {
			return a.group - b.group
		}
		if a.client != b.client {
			return a.client - b.client
		}
		return a.novel - b.novel
	})
	return keys, byKey
}

// draw adds the layout's points to p: a scatter per series, each in the legend while
// there are few, and with many clients each point's client number.
func (t *tsneLayout) draw(p *plot.Plot) error {
	perClient := len(t.e.Clients) <= maxTSNEClients
	keys, byKey := t.series(perClient)
	for ci, k := range keys {
		pts := chart.Points(byKey[k]) // the CSV keeps a coordinate that cannot be drawn
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		name := styleSeries(sc, k, ci, perClient)
		p.Add(sc)
		if len(keys) <= 24 {
			p.Legend.Add(name, sc)
		}
	}
	if !perClient && len(t.e.Clients) <= maxTSNELabels {
		t.label(p)
	}
	return nil
}

// styleSeries gives the scatter of series k (the ci-th) its colour and shape and returns
// its legend's name.
func styleSeries(sc *plotter.Scatter, k tsneKey, ci int, perClient bool) string {
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
	return name
}

// label writes each point's client number beside it (too many clients for a colour
// each).
func (t *tsneLayout) label(p *plot.Plot) {
	var xy plotter.XYs
	var names []string
	for i, c := range t.e.Clients {
		if chart.Drawable(t.xy[2*i]) && chart.Drawable(t.xy[2*i+1]) {
			xy = append(xy, plotter.XY{X: t.xy[2*i], Y: t.xy[2*i+1]})
			names = append(names, strconv.Itoa(c))
		}
	}
	if lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: names}); err == nil && len(xy) > 0 {
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = vg.Points(7)
		}
		lb.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
		p.Add(lb)
	}
}
