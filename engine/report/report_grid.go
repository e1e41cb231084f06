package report

import (
	"fmt"
	"os"
	"path/filepath"

	"pfl/engine/config"
	"pfl/engine/rundir"
)

// gridPage is a grid's page as it is built: the page, the pages of its runs written, the
// summaries of its finished runs (nil for the rest) and the maps of every run that has
// them.
type gridPage struct {
	*gridRuns
	kind    string
	page    page
	written []string
	started int
	maps    []*figure
}

// gridReport writes the page of a grid (seeds or a sweep), dir/report.html, and one page
// per run that has started (<point>/<member>/seed-<s>/report.html): the grid's page holds
// the tables over the sweep points (mean ± std across seeds), a row per run linking to its
// page, the sweep plots, each point's curves and partition, and the maps of every run
// that has them (pfl maps <run dir>).
func gridReport(dir string) ([]string, error) {
	g, err := rundir.OpenGrid(dir)
	if err != nil {
		return nil, err
	}
	cfg := g.Config
	gp := &gridPage{gridRuns: &gridRuns{Grid: g}, kind: "grid of seeds"}
	if len(cfg.Sweep) > 0 {
		gp.kind = "sweep"
	}
	gp.page = page{Title: cfg.Name, Kind: gp.kind, Generated: generated()}
	gp.page.Nav = []navLink{{Text: gp.kind + " " + cfg.Name, Href: "report.html", Current: true}}
	for _, l := range g.Runs {
		if err := gp.addRun(l); err != nil {
			return gp.written, err
		}
	}
	if gp.started == 0 {
		return nil, fmt.Errorf("report: no run of %s has started", dir)
	}
	p := &gp.page
	p.Protocols = protocols([]*runData{{cfg: g.Runs[0].Config}})
	p.Tables = gp.htmlTables()
	gp.addFigures(dir)
	p.Times = []keyValue{{"runs", fmt.Sprint(len(g.Runs))}, {"started", fmt.Sprint(gp.started)}}
	if b, err := os.ReadFile(filepath.Join(dir, "results.md")); err == nil {
		p.ResultsMD = markdownHTML(string(b))
	}
	p.Config, p.MemberKeys = memberConfigs(cfg, gp.MemberNames(), gp.memberConfigs())
	path := filepath.Join(dir, "report.html")
	return append([]string{path}, gp.written...), writePage(path, *p)
}

// memberConfigs is each member's config: its run at the first point under the first seed.
func (gp *gridPage) memberConfigs() []config.Config {
	cfgs := make([]config.Config, len(gp.MemberNames()))
	for i := len(gp.Runs) - 1; i >= 0; i-- {
		if l := gp.Runs[i]; l.Point == 0 && l.Seed == 0 && l.Member < len(cfgs) {
			cfgs[l.Member] = l.Config
		}
	}
	return cfgs
}

// addRun adds run l to the grid's page (its row, its machines, its maps) and writes its
// own page; a run not started is a row that says so.
func (gp *gridPage) addRun(l config.Leaf) error {
	g, cfg := gp.Grid, gp.Config
	rel, _ := filepath.Rel(g.Dir, l.Dir())
	if _, err := os.Stat(filepath.Join(l.Dir(), "config.json")); err != nil {
		gp.page.Results = append(gp.page.Results, resultRow{Name: rel, Status: "not started"})
		gp.runs = append(gp.runs, nil)
		return nil
	}
	gp.started++
	lc, err := rundir.LoadConfig(l.Dir())
	if err != nil {
		return err
	}
	r, err := loadRunData(l.Dir(), lc)
	if err != nil {
		return err
	}
	gp.runs = append(gp.runs, r.summary)
	row := resultOf(r, filepath.ToSlash(filepath.Join(rel, "report.html")))
	row.Name = rel
	gp.page.Results = append(gp.page.Results, row)
	gp.page.Machines = append(gp.page.Machines, r.machines...)
	rp := runPage(r, nil, nil)
	back, _ := filepath.Rel(l.Dir(), g.Dir)
	rp.Kind, rp.Title = "run of the "+gp.kind+" "+cfg.Name, cfg.Name+" / "+rel
	rp.Nav = []navLink{{Text: gp.kind + " " + cfg.Name, Href: filepath.ToSlash(filepath.Join(back, "report.html"))}, {Text: rel, Href: "report.html", Current: true}}
	path := filepath.Join(l.Dir(), "report.html")
	if err := writePage(path, rp); err != nil {
		return err
	}
	gp.written = append(gp.written, path)
	for _, f := range mapsFigures(l.Dir()) {
		if f != nil {
			f.Caption = rel + ": " + f.Caption
			gp.maps = append(gp.maps, f)
		}
	}
	return nil
}

// addFigures adds the grid's figures in dir to its page: the sweep's, the per-client
// ones, each point's curves and partition, and the runs' maps.
func (gp *gridPage) addFigures(dir string) {
	cfg := gp.Config
	var sweepFigs, curves, parts, clientFigs []*figure
	for _, met := range gridMetrics {
		if len(cfg.Sweep) == 1 {
			sweepFigs = append(sweepFigs, fileFigure(filepath.Join(dir, "sweep-"+met.key+".png"), met.title+" against "+cfg.Sweep[0].Key))
		}
		if len(cfg.Sweep) == 2 {
			for _, v := range cfg.Sweep[1].Values {
				sweepFigs = append(sweepFigs, fileFigure(filepath.Join(dir, "sweep-"+met.key+"-"+cfg.Sweep[1].Key+"="+config.FolderSafe(v)+".png"),
					fmt.Sprintf("%s against %s at %s = %s", met.title, cfg.Sweep[0].Key, cfg.Sweep[1].Key, v)))
			}
		}
	}
	for pi, pt := range gp.Points {
		name := pt.Name
		if name == "" {
			name = cfg.Name
		}
		curves = append(curves, fileFigure(filepath.Join(dir, pt.Name, "accuracy.png"), name+": test accuracy (micro) of every member, mean across seeds with a min–max band"))
		for _, l := range gp.Runs {
			if l.Point == pi {
				parts = append(parts, fileFigure(filepath.Join(l.Dir(), "partition.png"), name+": training samples per class and client (first seed)"))
				break
			}
		}
	}
	for _, name := range gp.MemberNames() {
		clientFigs = append(clientFigs, fileFigure(filepath.Join(dir, "clients-"+config.FolderSafe(name)+".png"), name+": final accuracy of every client at each swept value (first seed), the dotted line their mean"))
	}
	p := &gp.page
	p.Sections = addFigures(p.Sections, "Sweep", sweepFigs...)
	p.Sections = addFigures(p.Sections, "Per-client accuracy", clientFigs...)
	p.Sections = addFigures(p.Sections, "Convergence", curves...)
	p.Sections = addFigures(p.Sections, "Partitions", parts...)
	p.Sections = addFigures(p.Sections, "Attention and focal modulation maps", gp.maps...)
}

// htmlTables are the grid's tables (see tables) for the report: with a sweep, one per
// metric, a row per point and a column per member; without, a row per member. Runs that
// have not finished are left out of their cell.
func (g *gridRuns) htmlTables() []htmlTable {
	names := g.MemberNames()
	note := fmt.Sprintf(" — one run per cell (seed %d)", g.Seeds[0])
	if len(g.Config.Seeds) > 0 {
		note = fmt.Sprintf(" — mean ± sample std (n − 1) across the seeds %v of the per-run metric", g.Seeds)
	}
	var out []htmlTable
	if len(g.Config.Sweep) == 0 {
		t := htmlTable{Caption: "Across seeds" + note, Header: []string{"algorithm", gridMetrics[0].title, gridMetrics[1].title}}
		for mi, n := range names {
			t.Rows = append(t.Rows, []string{n, cell(g.values(0, mi, gridMetrics[0].of)), cell(g.values(0, mi, gridMetrics[1].of))})
		}
		return append(out, t)
	}
	for _, met := range gridMetrics {
		t := htmlTable{Caption: met.title + note}
		for _, a := range g.Config.Sweep {
			t.Header = append(t.Header, a.Key)
		}
		t.Header = append(t.Header, names...)
		for pi, pt := range g.Points {
			row := append([]string{}, pt.Values...)
			for mi := range names {
				row = append(row, cell(g.values(pi, mi, met.of)))
			}
			t.Rows = append(t.Rows, row)
		}
		out = append(out, t)
	}
	return out
}
