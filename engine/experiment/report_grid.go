package experiment

import (
	"fmt"
	"os"
	"path/filepath"
)

// gridReport writes the page of a grid (seeds or a sweep), dir/report.html, and one page
// per run that has started (<point>/<member>/seed-<s>/report.html): the grid's page holds
// the tables over the sweep points (mean ± std across seeds), a row per run linking to its
// page, the sweep plots, each point's curves and partition, and the maps of every run
// that has them (pfl maps <run dir>).
func gridReport(dir string) ([]string, error) {
	g, err := openGrid(dir)
	if err != nil {
		return nil, err
	}
	cfg := g.cfg
	kind := "grid of seeds"
	if len(cfg.Sweep) > 0 {
		kind = "sweep"
	}
	p := page{Title: cfg.Name, Kind: kind, Generated: generated()}
	p.Nav = []navLink{{Text: kind + " " + cfg.Name, Href: "report.html", Current: true}}
	var written []string
	var runs []*Result // one per leaf; a zero summary where the run has not finished
	started := 0
	var maps []*figure
	for _, l := range g.leaves {
		rel, _ := filepath.Rel(g.dir, l.dir())
		res := &Result{Dir: l.dir()}
		if _, err := os.Stat(filepath.Join(l.dir(), "config.json")); err != nil {
			p.Results = append(p.Results, resultRow{Name: rel, Status: "not started"})
			runs = append(runs, nil)
			continue
		}
		started++
		lc, err := LoadRunConfig(l.dir())
		if err != nil {
			return written, err
		}
		r, err := loadRunData(l.dir(), lc)
		if err != nil {
			return written, err
		}
		if r.summary != nil {
			res.Summary = *r.summary
		} else {
			res = nil
		}
		runs = append(runs, res)
		href := filepath.ToSlash(filepath.Join(rel, "report.html"))
		row := resultOf(r, href)
		row.Name = rel
		p.Results = append(p.Results, row)
		p.Machines = append(p.Machines, r.machines...)
		rp := runPage(r, nil, nil)
		back, _ := filepath.Rel(l.dir(), g.dir)
		rp.Kind, rp.Title = "run of the "+kind+" "+cfg.Name, cfg.Name+" / "+rel
		rp.Nav = []navLink{{Text: kind + " " + cfg.Name, Href: filepath.ToSlash(filepath.Join(back, "report.html"))}, {Text: rel, Href: "report.html", Current: true}}
		path := filepath.Join(l.dir(), "report.html")
		if err := writePage(path, rp); err != nil {
			return written, err
		}
		written = append(written, path)
		for _, f := range mapsFigures(l.dir()) {
			if f != nil {
				f.Caption = rel + ": " + f.Caption
				maps = append(maps, f)
			}
		}
	}
	if started == 0 {
		return nil, fmt.Errorf("report: no run of %s has started", dir)
	}
	if len(runs) > 0 && len(p.Results) > 0 {
		p.Protocols = protocols([]*runData{{cfg: g.leaves[0].cfg}})
	}
	p.Tables = g.htmlTables(runs)
	var sweepFigs, curves, parts []*figure
	for _, met := range gridMetrics {
		if len(cfg.Sweep) == 1 {
			sweepFigs = append(sweepFigs, fileFigure(filepath.Join(dir, "sweep-"+met.key+".png"), met.title+" against "+cfg.Sweep[0].Key))
		}
		if len(cfg.Sweep) == 2 {
			for _, v := range cfg.Sweep[1].Values {
				sweepFigs = append(sweepFigs, fileFigure(filepath.Join(dir, "sweep-"+met.key+"-"+cfg.Sweep[1].Key+"="+folderSafe(v)+".png"),
					fmt.Sprintf("%s against %s at %s = %s", met.title, cfg.Sweep[0].Key, cfg.Sweep[1].Key, v)))
			}
		}
	}
	for pi, pt := range g.points {
		name := pt.name
		if name == "" {
			name = cfg.Name
		}
		curves = append(curves, fileFigure(filepath.Join(dir, pt.name, "accuracy.png"), name+": test accuracy (micro) of every member, mean across seeds with a min–max band"))
		for _, l := range g.leaves {
			if l.point == pi {
				parts = append(parts, fileFigure(filepath.Join(l.dir(), "partition.png"), name+": training samples per class and client (first seed)"))
				break
			}
		}
	}
	p.Sections = addFigures(p.Sections, "Sweep", sweepFigs...)
	var clientFigs []*figure
	for _, name := range g.memberNames() {
		clientFigs = append(clientFigs, fileFigure(filepath.Join(dir, "clients-"+folderSafe(name)+".png"), name+": final accuracy of every client at each swept value (first seed), the dotted line their mean"))
	}
	p.Sections = addFigures(p.Sections, "Per-client accuracy", clientFigs...)
	p.Sections = addFigures(p.Sections, "Convergence", curves...)
	p.Sections = addFigures(p.Sections, "Partitions", parts...)
	p.Sections = addFigures(p.Sections, "Attention and focal modulation maps", maps...)
	p.Times = []keyValue{{"runs", fmt.Sprint(len(g.leaves))}, {"started", fmt.Sprint(started)}}
	if b, err := os.ReadFile(filepath.Join(dir, "results.md")); err == nil {
		p.ResultsMD = string(b)
	}
	flat, _ := flatten(cfg)
	p.Config = flatConfig(flat)
	path := filepath.Join(dir, "report.html")
	return append([]string{path}, written...), writePage(path, p)
}

// htmlTables are the grid's tables (see tables) for the report: with a sweep, one per
// metric, a row per point and a column per member; without, a row per member. Runs that
// have not finished are left out of their cell.
func (g *grid) htmlTables(runs []*Result) []htmlTable {
	var done []*Result
	var leaves []leaf
	for i, r := range runs {
		if r != nil {
			done, leaves = append(done, r), append(leaves, g.leaves[i])
		}
	}
	sub := *g
	sub.leaves = leaves
	names := g.memberNames()
	note := fmt.Sprintf(" — one run per cell (seed %d)", g.seeds[0])
	if len(g.cfg.Seeds) > 0 {
		note = fmt.Sprintf(" — mean ± sample std (n − 1) across the seeds %v of the per-run metric", g.seeds)
	}
	var out []htmlTable
	if len(g.cfg.Sweep) == 0 {
		t := htmlTable{Caption: "Across seeds" + note, Header: []string{"algorithm", gridMetrics[0].title, gridMetrics[1].title}}
		for mi, n := range names {
			t.Rows = append(t.Rows, []string{n, cell(sub.values(done, 0, mi, gridMetrics[0].of)), cell(sub.values(done, 0, mi, gridMetrics[1].of))})
		}
		return append(out, t)
	}
	for _, met := range gridMetrics {
		t := htmlTable{Caption: met.title + note}
		for _, a := range g.cfg.Sweep {
			t.Header = append(t.Header, a.Key)
		}
		t.Header = append(t.Header, names...)
		for pi, pt := range g.points {
			row := append([]string{}, pt.values...)
			for mi := range names {
				row = append(row, cell(sub.values(done, pi, mi, met.of)))
			}
			t.Rows = append(t.Rows, row)
		}
		out = append(out, t)
	}
	return out
}
