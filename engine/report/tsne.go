package report

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"pfl/engine/analysis"
	"pfl/engine/data"
	"pfl/engine/internal/atomicfile"
	"pfl/engine/internal/chart"
	"pfl/engine/rundir"
)

// clientClasses is what a run's partition (dir/partition.json) says of its clients for a
// t-SNE: each client's coarse group under the coarse-groups partition (whose clients of
// one coarse class hold exactly its fine classes: clients are grouped by the set of
// classes they train on, numbered in order of first appearance; nil under any other
// partition), each client's majority class (the class most of its training samples have)
// and that class's share of its samples, and the dataset's class names (nil when it names
// none).
type clientClasses struct {
	groups   []int
	majority []int
	share    []float64
	names    []string
}

// readClientClasses reads dir/partition.json into a clientClasses.
func readClientClasses(dir string) (*clientClasses, error) {
	b, err := os.ReadFile(filepath.Join(dir, "partition.json"))
	if err != nil {
		return nil, err
	}
	var m data.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "partition.json"), err)
	}
	cc := &clientClasses{names: m.ClassNames}
	ids := map[string]int{}
	for _, row := range m.TrainCount {
		var key strings.Builder
		best, total := 0, 0
		for c, n := range row {
			if n > 0 {
				fmt.Fprintf(&key, "%d,", c)
			}
			if n > row[best] {
				best = c
			}
			total += n
		}
		g, ok := ids[key.String()]
		if !ok {
			g = len(ids)
			ids[key.String()] = g
		}
		cc.groups = append(cc.groups, g)
		share := 0.0
		if total > 0 {
			share = float64(row[best]) / float64(total)
		} else {
			best = -1 // a client without training samples has no majority
		}
		cc.majority, cc.share = append(cc.majority, best), append(cc.share, share)
	}
	if m.Config.Method != data.MethodCoarseGroups {
		cc.groups = nil
	}
	return cc, nil
}

// maxTSNELegend is the most entries a t-SNE's legend lists; past that the points' colours
// repeat too often to be told apart anyway, and the legend is left out.
const maxTSNELegend = 24

// maxTSNELabels is the most clients a t-SNE writes the number of next to its point.
const maxTSNELabels = 64

// tsneLayout is a run's client embeddings placed in the plane: each row's client, whether
// it is novel, its coarse group (−1 without groups), its majority class (−1 unknown) and
// share, the class names, and its two coordinates.
type tsneLayout struct {
	e        *rundir.Embeddings
	group    []int
	majority []int
	share    []float64
	names    []string
	xy       []float64 // x0, y0, x1, y1, ...
}

// EmbeddingTSNE draws the t-SNE of a run's client embeddings (FedTP Fig. 9, TransFed
// Fig. 4) from dir/embeddings.csv: dir/embeddings_tsne.{png,svg}, each client a point
// coloured by its coarse group when the partition has groups (as the papers' figures),
// else by its majority class (named in the legend with the dataset's class names), novel
// clients as crosses, each point's client number and majority share beside it (up to
// maxTSNELabels), and the coordinates in dir/embeddings_tsne.csv (client, novel, group, x,
// y; group −1 without groups). The layout is seeded by the run's seed. A run without
// embeddings.csv is an error.
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
	title := RunTitle(cfg, "", nil)
	if s, err := rundir.ReadSummary(dir); err == nil { // it names the suite member and sweep point
		title = RunTitle(cfg, s.Member, s.Sweep)
	}
	p.Title.Text = title + ": t-SNE of the client embeddings"
	p.X.Label.Text, p.Y.Label.Text = "t-SNE 1 (no unit)", "t-SNE 2 (no unit)"
	data, err := t.draw(p)
	if err != nil {
		return err
	}
	chart.Pad(p, 0.08)
	chart.PlaceLegend(p, 6*vg.Inch, 5*vg.Inch, data...)
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
	cc, err := readClientClasses(dir)
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
	t := &tsneLayout{e: e, xy: y, names: cc.names}
	for _, c := range e.Clients {
		g, m, sh := -1, -1, 0.0
		if cc.groups != nil && c < len(cc.groups) {
			g = cc.groups[c]
		}
		if c < len(cc.majority) {
			m, sh = cc.majority[c], cc.share[c]
		}
		t.group, t.majority, t.share = append(t.group, g), append(t.majority, m), append(t.share, sh)
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

// tsneKey is one series of a t-SNE figure: the colour's class or group (−1: none known)
// and novel or not.
type tsneKey struct{ colour, novel int }

// series groups the layout's points by key: by coarse group when there are groups, else
// by majority class; the keys sorted by colour, novel clients last.
func (t *tsneLayout) series() ([]tsneKey, map[tsneKey]plotter.XYs) {
	byKey := map[tsneKey]plotter.XYs{}
	var keys []tsneKey
	for i := range t.e.Clients {
		k := tsneKey{t.majority[i], 0}
		if t.group[i] >= 0 {
			k.colour = t.group[i]
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
		if a.novel != b.novel {
			return a.novel - b.novel
		}
		return a.colour - b.colour
	})
	return keys, byKey
}

// draw adds the layout's points to p, a scatter per series, each in the legend while
// there are few, and each point's client number beside it; it returns the points, each on
// its own, for PlaceLegend.
func (t *tsneLayout) draw(p *plot.Plot) ([]plotter.XYs, error) {
	keys, byKey := t.series()
	colours := map[int]int{} // class or group → its colour's index
	var data []plotter.XYs
	for _, k := range keys {
		pts := chart.Points(byKey[k]) // the CSV keeps a coordinate that cannot be drawn
		if len(pts) == 0 {
			continue
		}
		if _, ok := colours[k.colour]; !ok {
			colours[k.colour] = len(colours)
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		ci := colours[k.colour]
		sc.Color, sc.Shape, sc.Radius = chart.Color(ci), chart.Shape(ci), vg.Points(4)
		if k.novel == 1 {
			sc.Shape = draw.CrossGlyph{}
		}
		p.Add(sc)
		if len(keys) <= maxTSNELegend {
			p.Legend.Add(t.seriesName(k), sc)
		}
		for _, q := range pts {
			data = append(data, plotter.XYs{q})
		}
	}
	if len(t.e.Clients) <= maxTSNELabels {
		t.label(p)
	}
	return data, nil
}

// seriesName is series k's legend entry: its group, or its majority class by name.
func (t *tsneLayout) seriesName(k tsneKey) string {
	var name string
	switch {
	case slices.ContainsFunc(t.group, func(g int) bool { return g >= 0 }):
		name = fmt.Sprintf("coarse group %d", k.colour)
	case k.colour < 0:
		name = "clients"
	case k.colour < len(t.names):
		name = fmt.Sprintf("majority class %d, %s", k.colour, t.names[k.colour])
	default:
		name = fmt.Sprintf("majority class %d", k.colour)
	}
	if k.novel == 1 {
		name += " (novel)"
	}
	return name
}

// label writes each point's client number beside it, with the share of its training
// samples in its majority class (its class mix: 100 % holds one class only) where known.
func (t *tsneLayout) label(p *plot.Plot) {
	var xy plotter.XYs
	var names []string
	for i, c := range t.e.Clients {
		if chart.Drawable(t.xy[2*i]) && chart.Drawable(t.xy[2*i+1]) {
			xy = append(xy, plotter.XY{X: t.xy[2*i], Y: t.xy[2*i+1]})
			name := strconv.Itoa(c)
			if t.majority[i] >= 0 {
				name += fmt.Sprintf(" (%.0f%%)", 100*t.share[i])
			}
			names = append(names, name)
		}
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: names})
	if err != nil || len(xy) == 0 {
		return
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(8)
		lb.TextStyle[i].Color = color.Gray{Y: 60}
	}
	lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(3)}
	p.Add(lb)
}
