package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/internal/atomicfile"
	"pfl/engine/internal/chart"
	"pfl/engine/rundir"
)

// Write writes a self-contained HTML page for the run or suite in dir, dir/report.html
// (every figure inlined as a data: URI, no script, nothing fetched from the network): the
// results under both papers' protocols, the convergence curves, the per-client accuracy
// distribution, the partition, the resource table, the maps, client-embedding t-SNE,
// gain-density and novel-client figures where the directory has them, the config, and the
// machines, versions and wall time. For a suite it also writes one page per member
// (<member>/report.html); the pages link to each other. It returns the pages written.
func Write(dir string) ([]string, error) {
	if rundir.IsGrid(dir) {
		return gridReport(dir)
	}
	cfg, err := rundir.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if len(cfg.Suite) == 0 {
		r, err := loadRunData(dir, cfg)
		if err != nil {
			return nil, err
		}
		page := runPage(r, nil, nil)
		path := filepath.Join(dir, "report.html")
		return []string{path}, writePage(path, page)
	}
	members, err := config.Members(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	var runs []*runData
	for _, m := range members {
		mdir := filepath.Join(m.Out, m.Name)
		if _, err := os.Stat(filepath.Join(mdir, "config.json")); err != nil {
			continue // never started
		}
		mc, err := rundir.LoadConfig(mdir)
		if err != nil {
			return nil, err
		}
		r, err := loadRunData(mdir, mc)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("report: no member of the suite %s has started", dir)
	}
	var written []string
	suiteFlat, err := config.Flatten(cfg)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		page := runPage(r, runs, suiteFlat)
		path := filepath.Join(dir, filepath.Base(r.dir), "report.html")
		if err := writePage(path, page); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	path := filepath.Join(dir, "report.html")
	return append([]string{path}, written...), writePage(path, suitePage(dir, cfg, runs))
}

// runData is what a run directory holds for its report.
type runData struct {
	dir      string
	cfg      config.Config
	summary  *rundir.Summary // nil until the run finishes
	lines    []rundir.Line
	novel    []int
	machines []rundir.Machine
}

// loadRunData reads what the run in dir holds for its page; cfg is its config.
func loadRunData(dir string, cfg config.Config) (*runData, error) {
	r := &runData{dir: dir, cfg: cfg, machines: rundir.ReadMachines(dir)}
	if s, err := rundir.ReadSummary(dir); err == nil {
		r.summary = &s
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, rundir.MetricsFile)); err == nil {
		if r.lines, err = rundir.ParseMetrics(b); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.MetricsFile), err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "partition.json")); err == nil {
		var m data.Manifest
		if json.Unmarshal(b, &m) == nil {
			r.novel = m.Novel
		}
	}
	return r, nil
}

// title names the run in its figures' titles (RunTitle).
func (r *runData) title() string {
	if r.summary != nil {
		return RunTitle(r.cfg, r.summary.Member, r.summary.Sweep)
	}
	return RunTitle(r.cfg, "", nil)
}

// finalAccuracy is the last evaluation's per-client accuracies of the clients that train.
func (r *runData) finalAccuracy() []float64 {
	for i := len(r.lines) - 1; i >= 0; i-- {
		if pc := r.lines[i].PerClient; pc != nil {
			var out []float64
			for c, a := range pc {
				if !slices.Contains(r.novel, c) {
					out = append(out, float64(a))
				}
			}
			return out
		}
	}
	return nil
}

// page is what the template draws.
type page struct {
	Title, Kind, Generated string
	Nav                    []navLink
	Results                []resultRow
	Protocols              []string
	Resources              []resourceRow
	Sections               []section
	Config, Differs        []keyValue
	Machines               []rundir.Machine
	Times                  []keyValue
	ResultsMD              template.HTML // results.md rendered
	Tables                 []htmlTable   // a grid's tables over its sweep points
	MemberKeys             *htmlTable    // the config keys a suite's or grid's members set differently
}

// htmlTable is a table of text cells; the first column is a name.
type htmlTable struct {
	Caption string
	Header  []string
	Rows    [][]string
}

type navLink struct {
	Text, Href string
	Current    bool
}

type keyValue struct{ Key, Value string }

type section struct {
	Title   string
	Figures []figure
}

// figure is an image of the page; a vector one (SVG) spans the page's width, a raster one
// keeps its own size (a maps sheet enlarged would blur).
type figure struct {
	Caption string
	Src     template.URL
	Vector  bool
}

type resultRow struct {
	Name, Href                           string
	Status                               string // "" when finished
	Flag                                 string // why the curve counts as falling, or ""
	TailMean, TailStd                    string
	TailEvals                            int
	FinalMean, FinalStd, P10, P50, P90   string
	Worst10, Micro, Wall, SPS, EvalProto string
	Rounds                               int
}

type resourceRow struct {
	Name                               string
	Stored, Personal, Up, Down, MFLOPs string
}

func pct(v float64) string { return fmt.Sprintf("%.2f", 100*v) }

func resultOf(r *runData, href string) resultRow {
	row := resultRow{Name: r.cfg.Name, Href: href}
	s := r.summary
	if s == nil {
		row.Status = fmt.Sprintf("unfinished: %d of %d rounds in metrics.jsonl", len(r.lines), r.cfg.Train.Rounds)
		return row
	}
	if s.Diverged != 0 {
		row.Status = fmt.Sprintf("diverged at round %d (its training loss was not finite); %d rounds before it", s.Diverged, s.Rounds)
		return row
	}
	if s.Falling != "" {
		row.Flag = "falling: " + s.Falling
	}
	row.TailMean, row.TailStd, row.TailEvals = pct(s.TailMean), pct(s.TailStd), s.TailEvals
	if s.TailEvals < 2 { // the spread of one evaluation is not 0, it is unknown
		row.TailStd = "n/a"
	}
	row.FinalMean, row.FinalStd = pct(s.FinalMean), pct(s.FinalStd)
	row.P10, row.P50, row.P90, row.Worst10, row.Micro = pct(s.P10), pct(s.P50), pct(s.P90), pct(s.Worst10), pct(s.FinalMicro)
	row.Wall, row.SPS, row.Rounds, row.EvalProto = fmt.Sprintf("%.0f", s.WallSeconds), fmt.Sprintf("%.0f", s.SamplesPerSec), s.Rounds, s.EvalProtocol
	return row
}

func resourcesOf(r *runData) (resourceRow, bool) {
	if r.summary == nil {
		return resourceRow{}, false
	}
	res := r.summary.Resources
	return resourceRow{Name: r.cfg.Name, Stored: commas(res.StoredParams), Personal: commas(res.PersonalParams),
		Up: commas(res.UpParams), Down: commas(res.DownParams), MFLOPs: fmt.Sprintf("%.2f", res.TrainFLOPs/1e6)}, true
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func protocols(runs []*runData) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		p := r.cfg.Train.EvalProtocol
		if !seen[p] {
			seen[p] = true
			out = append(out, p+": "+protocolText[p])
		}
	}
	return out
}

// fileFigure is the image file at path as a figure (nil when absent); for a .png, its .svg
// beside it when there is one (sharp at any width) and not too large to inline.
func fileFigure(path, caption string) *figure {
	if png, ok := strings.CutSuffix(path, ".png"); ok {
		if st, err := os.Stat(png + ".svg"); err == nil && st.Size() <= maxInlineSVG {
			if b, err := os.ReadFile(png + ".svg"); err == nil {
				return &figure{Caption: caption, Src: dataURI("image/svg+xml", b), Vector: true}
			}
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	mime := "image/png"
	if strings.HasSuffix(path, ".svg") {
		mime = "image/svg+xml"
	}
	return &figure{Caption: caption, Src: dataURI(mime, b), Vector: mime == "image/svg+xml"}
}

// maxInlineSVG is the largest SVG a page inlines in place of its PNG (a partition of
// hundreds of clients and classes draws a rectangle per cell: its PNG is smaller).
const maxInlineSVG = 1 << 20

func dataURI(mime string, b []byte) template.URL {
	return template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b))
}

// addFigures appends the figures present to a section titled title (none: no section).
func addFigures(secs []section, title string, figs ...*figure) []section {
	var keep []figure
	for _, f := range figs {
		if f != nil {
			keep = append(keep, *f)
		}
	}
	if len(keep) == 0 {
		return secs
	}
	return append(secs, section{Title: title, Figures: keep})
}

// distribution is the per-client accuracy figure of distributionPlot as an SVG figure
// (nil without one).
func distribution(runs []*runData) *figure {
	p, caption, w, h := distributionPlot(runs)
	if p == nil {
		return nil
	}
	b, err := chart.Render(p, w, h, "svg")
	if err != nil {
		return nil
	}
	return &figure{Caption: caption, Src: dataURI("image/svg+xml", b), Vector: true}
}

// distributionPlot is the per-client accuracy figure, its caption and size: a histogram
// for one run; for several, each member's density, or each member's clients as points
// under stripClients clients. Nil when no accuracy can be drawn.
func distributionPlot(runs []*runData) (*plot.Plot, string, vg.Length, vg.Length) {
	if len(runs) == 1 {
		return histogram(runs[0])
	}
	var rows []stripRow
	n := 0
	for _, r := range runs {
		acc := chart.Values(r.finalAccuracy())
		if len(acc) == 0 {
			continue
		}
		for i := range acc {
			acc[i] *= 100
		}
		rows = append(rows, stripRow{r.cfg.Name, acc})
		n = max(n, len(acc))
	}
	p, err := perClientFigure("per-client accuracy at the last evaluation", "final accuracy per client, %", false, rows, 0, 100)
	if err != nil || p == nil {
		return nil, "", 0, 0
	}
	caption := "Gaussian kernel density of each member's per-client accuracies (Silverman's bandwidth; novel clients left out)"
	if n < stripClients {
		caption = fmt.Sprintf("each member's clients (fewer than %d: each a point, the bar their median; novel clients left out)", stripClients)
	}
	return p, caption, 7 * vg.Inch, 4 * vg.Inch
}

// histogram is one run's per-client accuracies as a histogram, with distributionPlot's
// caption and size.
func histogram(r *runData) (*plot.Plot, string, vg.Length, vg.Length) {
	// a client without test samples has a NaN accuracy, which a histogram cannot bin
	acc := chart.Values(r.finalAccuracy())
	if len(acc) == 0 {
		return nil, "", 0, 0
	}
	vals := make(plotter.Values, len(acc))
	for i, a := range acc {
		vals[i] = 100 * a
	}
	h, err := plotter.NewHist(vals, min(20, max(5, len(vals)/2))) // a few clients: a few wide bins
	if err != nil {
		return nil, "", 0, 0
	}
	h.FillColor = chart.Color(0)
	p := plot.New()
	p.Add(h)
	p.Title.Text = r.title() + ": per-client accuracy at the last evaluation"
	p.X.Label.Text, p.Y.Label.Text = "final accuracy per client, %", "clients"
	p.Y.Min = 0
	chart.Pad(p, 0.03)
	p.Y.Min = 0
	p.Y.Tick.Marker = chart.IntTicks{} // a count of clients
	return p, fmt.Sprintf("%d clients that train (novel clients left out)", len(acc)), 6 * vg.Inch, 3.5 * vg.Inch
}

// mapsFigures are the maps sheets in dir/maps.
func mapsFigures(dir string) []*figure {
	b, err := os.ReadFile(filepath.Join(dir, "maps", "maps.json"))
	if err != nil {
		return nil
	}
	var info MapsInfo
	if json.Unmarshal(b, &info) != nil {
		return nil
	}
	var out []*figure
	for i, s := range info.Sheets {
		caption := fmt.Sprintf("client %d: its test images, then each member's map (rollout: %s fusion, %.0f%% discarded)", info.Clients[i], info.Fusion, 100*info.Discard)
		out = append(out, fileFigure(filepath.Join(dir, "maps", s), caption))
	}
	for _, m := range info.Members {
		if m.Skipped != "" {
			out = append(out, &figure{Caption: m.Name + ": no maps (" + m.Skipped + ")"})
		}
	}
	return out
}

// flatConfig is a config's dotted keys and JSON values, sorted.
func flatConfig(flat map[string]any) []keyValue {
	var out []keyValue
	for k, v := range flat {
		out = append(out, keyValue{k, jsonText(v)})
	}
	slices.SortFunc(out, func(a, b keyValue) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// timeSplit sums the rounds' time split from metrics.jsonl.
func timeSplit(r *runData) []keyValue {
	var d, t, a, e float64
	for _, l := range r.lines {
		d, t, a, e = d+l.DataS, t+l.TrainS, a+l.AggS, e+l.EvalS
	}
	sec := func(v float64) string { return fmt.Sprintf("%.1f s", v) }
	out := []keyValue{{"rounds recorded", fmt.Sprint(len(r.lines))}, {"data", sec(d)}, {"train", sec(t)},
		{"aggregate", sec(a)}, {"eval", sec(e)}, {"sum of the rounds", sec(d + t + a + e)}}
	if r.summary != nil {
		out = append(out, keyValue{"wall (every segment of a resumed run)", sec(r.summary.WallSeconds)},
			keyValue{"samples/s", fmt.Sprintf("%.0f", r.summary.SamplesPerSec)})
	}
	return out
}

func generated() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s on %s", time.Now().UTC().Format(time.RFC3339), host)
}

// runPage is one run's page; runs, when not nil, are its suite's members (for the
// navigation) and suiteFlat the suite's flattened config.
func runPage(r *runData, runs []*runData, suiteFlat map[string]any) page {
	p := page{Title: r.cfg.Name, Kind: "run", Generated: generated(), Machines: r.machines, Times: timeSplit(r)}
	if runs != nil {
		p.Kind = "suite member"
		p.Title = filepath.Base(r.cfg.Out) + " / " + r.cfg.Name
		p.Nav = append(p.Nav, navLink{Text: "suite " + filepath.Base(r.cfg.Out), Href: "../report.html"})
		for _, m := range runs {
			p.Nav = append(p.Nav, navLink{Text: m.cfg.Name, Href: "../" + filepath.Base(m.dir) + "/report.html", Current: m == r})
		}
	}
	p.Results = []resultRow{resultOf(r, "")}
	p.Protocols = protocols([]*runData{r})
	if rr, ok := resourcesOf(r); ok {
		p.Resources = []resourceRow{rr}
	}
	d := r.dir
	p.Sections = addFigures(p.Sections, "Convergence",
		fileFigure(filepath.Join(d, "accuracy.png"), "test accuracy: all samples (micro) and the mean over clients"),
		fileFigure(filepath.Join(d, "loss.png"), "mean training loss of the round's clients"))
	p.Sections = addFigures(p.Sections, "Per-client accuracy", distribution([]*runData{r}),
		fileFigure(filepath.Join(d, "clients.png"), "final accuracy of every client, sorted"))
	p.Sections = addFigures(p.Sections, "Partition", fileFigure(filepath.Join(d, "partition.png"), "training samples per class and client"))
	p.Sections = addFigures(p.Sections, "Attention and focal modulation maps", mapsFigures(d)...)
	p.Sections = addFigures(p.Sections, "Client embeddings",
		fileFigure(filepath.Join(d, "embeddings_tsne.png"), "t-SNE of the hypernetwork's client embeddings"))
	flat, _ := config.Flatten(r.cfg)
	p.Config = flatConfig(flat)
	for _, kv := range p.Config {
		if suiteFlat == nil || slices.Contains([]string{"name", "out", "suite", "suite_table", "note"}, kv.Key) {
			continue
		}
		if v, ok := suiteFlat[kv.Key]; !ok || jsonText(v) != kv.Value {
			p.Differs = append(p.Differs, kv)
		}
	}
	return p
}

// suitePage is the suite's page.
func suitePage(dir string, cfg config.Config, runs []*runData) page {
	p := page{Title: cfg.Name, Kind: "suite", Generated: generated()}
	p.Nav = append(p.Nav, navLink{Text: "suite " + cfg.Name, Href: "report.html", Current: true})
	for _, r := range runs {
		href := filepath.Base(r.dir) + "/report.html"
		p.Nav = append(p.Nav, navLink{Text: r.cfg.Name, Href: href})
		p.Results = append(p.Results, resultOf(r, href))
		if rr, ok := resourcesOf(r); ok {
			p.Resources = append(p.Resources, rr)
		}
		p.Machines = append(p.Machines, r.machines...)
	}
	p.Protocols = protocols(runs)
	p.Sections = addFigures(p.Sections, "Convergence", fileFigure(filepath.Join(dir, "accuracy.png"), "test accuracy (micro) of every member"))
	p.Sections = addFigures(p.Sections, "Per-client accuracy", distribution(runs),
		fileFigure(filepath.Join(dir, "gain_density.png"), "per-client accuracy gain over Local (FedPerfix Fig. 3)"))
	p.Sections = addFigures(p.Sections, "Partition (the members share it)", fileFigure(filepath.Join(runs[0].dir, "partition.png"), "training samples per class and client"))
	p.Sections = addFigures(p.Sections, "Attention and focal modulation maps", mapsFigures(dir)...)
	var emb []*figure
	for _, r := range runs {
		emb = append(emb, fileFigure(filepath.Join(r.dir, "embeddings_tsne.png"), r.cfg.Name+": t-SNE of the client embeddings"))
	}
	p.Sections = addFigures(p.Sections, "Client embeddings", emb...)
	p.Sections = addFigures(p.Sections, "Novel clients", fileFigure(filepath.Join(dir, "novel.png"), "novel clients' accuracy while fine-tuning"))
	var d, t, a, e, wall float64
	for _, r := range runs {
		for _, l := range r.lines {
			d, t, a, e = d+l.DataS, t+l.TrainS, a+l.AggS, e+l.EvalS
		}
		if r.summary != nil {
			wall += r.summary.WallSeconds
		}
	}
	sec := func(v float64) string { return fmt.Sprintf("%.1f s", v) }
	p.Times = []keyValue{{"members", fmt.Sprint(len(runs))}, {"data", sec(d)}, {"train", sec(t)}, {"aggregate", sec(a)},
		{"eval", sec(e)}, {"wall, summed over members", sec(wall)}}
	if b, err := os.ReadFile(filepath.Join(dir, "results.md")); err == nil {
		p.ResultsMD = markdownHTML(string(b))
	}
	var names []string
	var cfgs []config.Config
	for _, r := range runs {
		names, cfgs = append(names, r.cfg.Name), append(cfgs, r.cfg)
	}
	p.Config, p.MemberKeys = memberConfigs(cfg, names, cfgs)
	return p
}

// jsonText is v as JSON, for the config's table.
func jsonText(v any) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false) // the page escapes it; JSON's \u003e for > would show as such
	_ = e.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func writePage(path string, p page) error {
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, buf.Bytes())
}

// reportTemplate is the page: well-formed XHTML-style markup (void elements closed), so
// that an XML parser reads it, with inline CSS and no script.
var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>pfl: {{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 78em; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
td { white-space: nowrap; }
th { background: #f0f0f0; }
td.name, th.name, td.key { text-align: left; }
small.flag { color: #a04000; white-space: normal; }
nav a { margin-right: 1em; }
nav a.current { font-weight: bold; text-decoration: none; color: #222; }
figure { display: block; margin: 0.8em 0 1.4em 0; }
figure img { display: block; max-width: 100%; border: 1px solid #ddd; }
figure img.vector { width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; margin-top: 0.3em; }
div.wide { overflow-x: auto; max-width: 100%; }
table.md td, table.md th { white-space: normal; }
#config-table td + td, #differs-table td + td { white-space: normal; overflow-wrap: anywhere; }
table.md th { vertical-align: bottom; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
.muted { color: #777; font-size: 0.85em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="muted">pfl report of a {{.Kind}}, generated {{.Generated}}.</p>
{{if .Nav}}<nav>{{range .Nav}}<a href="{{.Href}}"{{if .Current}} class="current"{{end}}>{{.Text}}</a>{{end}}</nav>{{end}}

<h2 id="results">Results</h2>
{{range .Protocols}}<p class="muted">Evaluation protocol {{.}}.</p>{{end}}
<div class="wide"><table id="results-table">
<tr><th class="name">algorithm</th><th>FedTP protocol: micro accuracy, mean ± std over the last evaluations (%)</th><th>evals</th><th>FedPerfix protocol: final per-client mean ± std (%)</th><th>p10 / p50 / p90 (%)</th><th>worst 10% (%)</th><th>final micro (%)</th><th>rounds</th><th>wall s</th><th>samples/s</th></tr>
{{range .Results}}<tr>{{if .Href}}<td class="name"><a href="{{.Href}}">{{.Name}}</a>{{if .Flag}}<br><small class="flag">{{.Flag}}</small>{{end}}</td>{{else}}<td class="name">{{.Name}}{{if .Flag}}<br><small class="flag">{{.Flag}}</small>{{end}}</td>{{end}}{{if .Status}}<td colspan="9" class="name">{{.Status}}</td>{{else}}<td>{{.TailMean}} ± {{.TailStd}}</td><td>{{.TailEvals}}</td><td>{{.FinalMean}} ± {{.FinalStd}}</td><td>{{.P10}} / {{.P50}} / {{.P90}}</td><td>{{.Worst10}}</td><td>{{.Micro}}</td><td>{{.Rounds}}</td><td>{{.Wall}}</td><td>{{.SPS}}</td>{{end}}</tr>
{{end}}</table></div>

{{range .Tables}}<h2>{{.Caption}}</h2>
<div class="wide"><table class="grid-table">
<tr>{{range $i, $h := .Header}}<th{{if not $i}} class="name"{{end}}>{{$h}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if not $i}} class="name"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}
{{if .Resources}}<h2 id="resources">Resources</h2>
<p class="muted">Per client: trainable parameters stored and kept personal; parameters sent up and down per sampled client per round; training FLOPs per sample = 2 × 3 × forward MACs × the algorithm's passes per sample.</p>
<table id="resources-table">
<tr><th class="name">algorithm</th><th>stored params</th><th>personal params</th><th>up params per round</th><th>down params per round</th><th>training MFLOPs per sample</th></tr>
{{range .Resources}}<tr><td class="name">{{.Name}}</td><td>{{.Stored}}</td><td>{{.Personal}}</td><td>{{.Up}}</td><td>{{.Down}}</td><td>{{.MFLOPs}}</td></tr>
{{end}}</table>{{end}}

{{range .Sections}}<h2>{{.Title}}</h2>
{{range .Figures}}<figure>{{if .Src}}<img src="{{.Src}}" alt="{{.Caption}}"{{if .Vector}} class="vector"{{end}}/>{{end}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}{{end}}

{{if .ResultsMD}}<h2 id="results-md">results.md</h2>
<div id="results-md-body">{{.ResultsMD}}</div>{{end}}

<h2 id="time">Time</h2>
<table id="time-table">
{{range .Times}}<tr><td class="key">{{.Key}}</td><td>{{.Value}}</td></tr>
{{end}}</table>

<h2 id="machine">Machines and versions</h2>
{{if .Machines}}<table id="machine-table">
<tr><th class="name">started (UTC)</th><th class="name">host</th><th class="name">OS</th><th>CPUs</th><th class="name">Go</th><th class="name">pfl revision</th><th class="name">torch</th><th class="name">device</th><th class="name">CUDA</th></tr>
{{range .Machines}}<tr><td class="name">{{.Started.Format "2006-01-02 15:04:05"}}{{if .Resumed}} (resumed){{end}}</td><td class="name">{{.Host}}</td><td class="name">{{.OS}}</td><td>{{.CPUs}}</td><td class="name">{{.Go}}</td><td class="name">{{.Revision}}</td><td class="name">{{.Torch}}</td><td class="name">{{.Device}}</td><td class="name">{{.CUDA}}</td></tr>
{{end}}</table>{{else}}<p class="muted">The run directory records no machine (machine.json).</p>{{end}}

{{if .Differs}}<h2 id="member-keys">Keys this member sets</h2>
<table id="differs-table">
{{range .Differs}}<tr><td class="key">{{.Key}}</td><td class="key">{{.Value}}</td></tr>
{{end}}</table>{{end}}

{{with .MemberKeys}}<h2 id="member-config">{{.Caption}}</h2>
<div class="wide"><table id="member-config-table">
<tr>{{range $i, $h := .Header}}<th{{if not $i}} class="name"{{end}}>{{$h}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}<td class="key">{{$c}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}

<h2 id="config">Config</h2>
<table id="config-table">
{{range .Config}}<tr><td class="key">{{.Key}}</td><td class="key">{{.Value}}</td></tr>
{{end}}</table>
</body>
</html>
`))
