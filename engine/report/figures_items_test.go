package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/internal/chart"
	"pfl/engine/rundir"
)

// TestRunTitle: a run is titled by its algorithm (after its member's name where that
// differs), dataset, sweep point and seed, never by its folder's name.
func TestRunTitle(t *testing.T) {
	cfg := config.Config{Name: "seed-1", Seed: 1}
	cfg.Algorithm.Name, cfg.Data.Dataset = "fedtp", "cifar10"
	for _, tc := range []struct {
		member string
		sweep  []config.SweepValue
		want   string
	}{
		{"", nil, "fedtp · cifar10 · seed 1"},
		{"fedtp", nil, "fedtp · cifar10 · seed 1"},
		{"partial-head", nil, "partial-head (fedtp) · cifar10 · seed 1"},
		{"", []config.SweepValue{{Key: "data.alpha", Value: "0.1"}}, "fedtp · cifar10 · data.alpha=0.1 · seed 1"},
	} {
		if got := RunTitle(cfg, tc.member, tc.sweep); got != tc.want {
			t.Errorf("member %q, sweep %v: %q, want %q", tc.member, tc.sweep, got, tc.want)
		}
	}
}

// TestClientsFigureDrawsPoints: clients.png draws each client as its own point (no line
// joins clients that have nothing in common but their rank) and names them in the legend
// as clients, with their mean.
func TestClientsFigureDrawsPoints(t *testing.T) {
	var data []plotter.XYs
	chart.Placed = func(_ *plot.Plot, _ chart.Corner, _, _ float64, d []plotter.XYs) { data = d }
	defer func() { chart.Placed = nil }()
	dir := t.TempDir()
	if err := clientsFigure(dir, "fedtp · cifar10 · seed 1", []float64{0.2, 0.4, 0.5, 0.9}); err != nil {
		t.Fatal(err)
	}
	points := 0
	for _, d := range data {
		switch len(d) {
		case 1:
			points++
		case 2:
			if d[0].Y != d[1].Y {
				t.Errorf("a sloped line %v: only the mean (flat) may be a line", d)
			}
		default:
			t.Errorf("a line through %d points: clients joined", len(d))
		}
	}
	if points != 4 {
		t.Errorf("%d separate points, want 4 clients", points)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "clients.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one client (4 that train)", "mean over clients, 50.0 %", "fedtp · cifar10 · seed 1"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("clients.svg does not say %q", want)
		}
	}
}

// TestPerClientFigureKind: under stripClients clients every client is a point (a strip
// plot, no density); from stripClients on, a kernel density per member.
func TestPerClientFigureKind(t *testing.T) {
	for _, n := range []int{1, 10, stripClients - 1, stripClients, 80} {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = float64(i%17) * 3
		}
		p, err := perClientFigure("gains", "accuracy gain over Local, percentage points", true, []stripRow{{"fedtp", vs}, {"fedavg", vs}}, -100, 100)
		if err != nil || p == nil {
			t.Fatalf("%d clients: %v", n, err)
		}
		strip := strings.Contains(p.Y.Label.Text, "a point per client")
		if strip != (n < stripClients) {
			t.Errorf("%d clients: y axis %q, want a strip plot under %d clients and a density from then on", n, p.Y.Label.Text, stripClients)
		}
	}
}

// TestSweepOffsetsSeparateMembers: members' points at one swept value sit apart, centred
// on it, on a linear and on a log axis, and a sweep figure's members do not share an x.
func TestSweepOffsetsSeparateMembers(t *testing.T) {
	for _, tc := range []struct {
		xs  []float64
		log bool
	}{{[]float64{1, 2, 3}, false}, {[]float64{0.01, 0.1, 1}, true}, {[]float64{5}, false}} {
		var got []float64
		for m := 0; m < 3; m++ {
			got = append(got, sweepOffset(tc.xs[0], tc.xs, m, 3, tc.log))
		}
		if !(got[0] < got[1] && got[1] < got[2]) || got[1] != tc.xs[0] {
			t.Errorf("%v (log %t): three members at %v, want apart and centred on %g", tc.xs, tc.log, got, tc.xs[0])
		}
	}
	// a sweep of two members with two seeds: no two members' points share an x
	var data [][]plotter.XYs
	chart.Placed = func(_ *plot.Plot, _ chart.Corner, _, _ float64, d []plotter.XYs) { data = append(data, d) }
	defer func() { chart.Placed = nil }()
	dir := filepath.Join(t.TempDir(), "g")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filled(config.Config{Out: filepath.Dir(dir), Name: filepath.Base(dir), Seeds: []uint64{1, 2}, Suite: []string{"fedavg", "local"},
		Sweep: []config.SweepAxis{{Key: "data.alpha", Values: []string{"0.1", "1"}}}})
	cfg.Data.Dataset, cfg.Data.Clients, cfg.Train.Participation = "synthetic:300", 4, 1
	cg, err := config.NewGrid(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := &gridRuns{Grid: cg}
	for _, l := range g.Runs {
		g.runs = append(g.runs, &rundir.Summary{Name: l.Config.Name, TailMean: 0.5, FinalMean: 0.5})
	}
	if err := g.sweepPlot(gridMetrics[0], -1, "sweep"); err != nil {
		t.Fatal(err)
	}
	// each member draws its points, then its bars' lower and upper ends
	if len(data) != 1 || len(data[0]) != 6 {
		t.Fatalf("sweep figure data %v, want two members' points and bar ends", data)
	}
	for i, q := range data[0][0] {
		if r := data[0][3][i]; q.X == r.X {
			t.Errorf("both members' points at x = %g: their error bars hide each other", q.X)
		}
	}
}

// TestTSNEColoursByMajorityClass: without coarse groups, each client is coloured by the
// class most of its training samples have, and the legend names the class.
func TestTSNEColoursByMajorityClass(t *testing.T) {
	dir := t.TempDir()
	cfg := filled(config.Config{Out: filepath.Dir(dir), Name: filepath.Base(dir)})
	if err := rundir.WriteJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	m := data.Manifest{Config: data.PartitionConfig{Method: data.MethodDirichlet}, Classes: 3, ClassNames: []string{"T-shirt/top", "Trouser", "Pullover"}}
	var emb strings.Builder
	emb.WriteString("client,novel,z0,z1\n")
	for c := 0; c < 6; c++ {
		row := []int{1, 1, 1}
		row[c%2] = 10 // clients 0, 2, 4 mostly T-shirts; 1, 3, 5 mostly trousers
		m.TrainCount = append(m.TrainCount, row)
		fmt.Fprintf(&emb, "%d,false,%g,%g\n", c, float64(c%2)*4+0.1*float64(c), 0.2*float64(c))
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "partition.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "embeddings.csv"), []byte(emb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := EmbeddingTSNE(dir); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "embeddings_tsne.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"majority class 0, T-shirt/top", "majority class 1, Trouser", "83%"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the t-SNE does not say %q", want)
		}
	}
	if strings.Contains(string(svg), "Pullover") {
		t.Error("the legend names a class no client holds most of")
	}
}

// TestMarkdownHTML: results.md's tables become HTML tables in a box that scrolls
// sideways, its paragraphs paragraphs, and nothing of it shows as raw Markdown.
func TestMarkdownHTML(t *testing.T) {
	md := "Evaluation protocol (train.eval_protocol): fedtp — every client <evaluated>.\n\n" +
		"| algorithm | accuracy |\n|---|---|\n| fedtp | 81.20 ± 0.35 |\n| local | 79.00 ± 1.00 |\n\n" +
		"Trend: the rise of `train.tail_rounds`.\ntitle:\n\n| key | fedtp |\n|---|---|\n| 0.1 | 80 |\n"
	got := string(markdownHTML(md))
	for _, want := range []string{
		`<div class="wide"><table class="md">`,
		`<tr><th class="name">algorithm</th><th>accuracy</th></tr>`,
		`<tr><td class="name">fedtp</td><td>81.20 ± 0.35</td></tr>`,
		"<p>Evaluation protocol (train.eval_protocol): fedtp — every client &lt;evaluated&gt;.</p>",
		"<code>train.tail_rounds</code>",
		`<td class="name">0.1</td>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "|") || strings.Contains(got, "---") {
		t.Errorf("raw Markdown left in\n%s", got)
	}
}

// TestMemberConfigs: a suite's config table shows its members' values, not the defaults
// the suite file leaves; keys the members set differently get a column per member.
func TestMemberConfigs(t *testing.T) {
	top := filled(config.Config{Name: "s", Suite: []string{"fedtp", "local"}})
	var cfgs []config.Config
	for _, a := range []string{"fedtp", "local"} {
		c := top
		c.Suite, c.Name = nil, a
		c.Algorithm.Name = a
		c.Train.Rounds = 7 // set alike by both members, unlike the suite's default
		cfgs = append(cfgs, c)
	}
	shared, differ := memberConfigs(top, []string{"fedtp", "local"}, cfgs)
	values := map[string]string{}
	for _, kv := range shared {
		values[kv.Key] = kv.Value
	}
	if _, ok := values["algorithm.name"]; ok {
		t.Errorf("the shared table shows algorithm.name %s for two algorithms", values["algorithm.name"])
	}
	if values["train.rounds"] != "7" || values["name"] != `"s"` || values["suite"] != `["fedtp","local"]` {
		t.Errorf("shared train.rounds %s, name %s, suite %s: want the members' 7 and the suite's own name and members", values["train.rounds"], values["name"], values["suite"])
	}
	if got := jsonText("FedTP > FedAvg"); got != `"FedTP > FedAvg"` {
		t.Errorf("a note's > shows as %s", got)
	}
	if differ == nil || len(differ.Rows) != 1 || strings.Join(differ.Rows[0], " ") != `algorithm.name "fedtp" "local"` ||
		strings.Join(differ.Header, " ") != "key fedtp local" {
		t.Errorf("members' table %+v", differ)
	}
}

// TestOneClient: a run of one client draws its curves, its one client as a point and, in
// a suite, its gain as a strip of one point, with every legend inside the image and off
// the data.
func TestOneClient(t *testing.T) {
	placed := map[*plot.Plot][]plotter.XYs{}
	drawn := map[*plot.Plot]chart.Geometry{}
	chart.Placed = func(p *plot.Plot, _ chart.Corner, _, _ float64, data []plotter.XYs) { placed[p] = data }
	chart.Drawn = func(p *plot.Plot, g chart.Geometry) { drawn[p] = g }
	defer func() { chart.Placed, chart.Drawn = nil, nil }()
	h := figureHistory(5, 1, 0.5)
	dir := t.TempDir()
	if err := RunFigures(dir, "fedtp · synthetic · seed 1", h, nil); err != nil {
		t.Fatal(err)
	}
	final := h[len(h)-1].Eval.Accuracy
	runs := []Run{{Summary: rundir.Summary{Name: "local"}, Final: []float64{0.4}}, {Summary: rundir.Summary{Name: "fedtp"}, Final: final}}
	if err := gainDensity(dir, runs); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"accuracy.png", "loss.png", "clients.png", "gain_density.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	if p, _, _, _ := distributionPlot([]*runData{figureRun("fedtp", h)}); p == nil {
		t.Error("no accuracy distribution of one client")
	}
	if len(drawn) < 4 {
		t.Errorf("%d figures drawn, want at least 4", len(drawn))
	}
	for p, g := range drawn {
		checkGeometry(t, p, g, placed[p])
	}
}
