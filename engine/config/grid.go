package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// A Grid is a config with seeds or a sweep, laid out as its runs: the cross product of
// its sweep points, its suite members and its seeds, one run each. The runs lie in
//
//	<out>/<name>/[<point>/][<member>/][seed-<s>/]
//
// where a level is there only when the config has it (a point is named from its values,
// "data.alpha=0.1,train.participation=0.25"; a member is a suite label), so a config
// without seeds and sweep keeps the single run's and the suite's layout.
type Grid struct {
	Dir     string
	Config  Config   // as given (unresolved, so that a swept key's followers follow it)
	Points  []Point  // one, unnamed, without a sweep
	Members []string // the suite's labels; none without a suite
	Seeds   []uint64 // one (Config.Seed) without seeds
	Runs    []Leaf   // points, then members, then seeds
}

// A Point is one combination of the sweep's values.
type Point struct {
	Name   string      // directory name; "" without a sweep
	Values []string    // one per sweep axis, as written
	Sets   [][2]string // key, value
}

// A Leaf is one run of a grid: its point, member and seed (indices) and its config,
// resolved and validated, whose Out/Name is its directory.
type Leaf struct {
	Point, Member, Seed int
	Config              Config
}

// Dir is the leaf's run directory.
func (l Leaf) Dir() string { return filepath.Join(l.Config.Out, l.Config.Name) }

// Place is a run's place in a suite or grid: its suite member's label ("" outside a
// suite) and its sweep point's values (none without a sweep).
type Place struct {
	Member string
	Sweep  []SweepValue
}

// SweepValue is one key of a sweep point and its value as the sweep lists it.
type SweepValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// NewGrid expands cfg, which has seeds or a sweep, into its runs and checks every one of
// them: the first invalid value is an error naming the point, member and seed and the key.
func NewGrid(cfg Config) (*Grid, error) {
	if cfg.Name == "" {
		cfg.Name = cfg.Resolved().Name
	}
	if err := cfg.Resolved().Validate(); err != nil {
		return nil, err
	}
	if !cfg.IsGrid() {
		return nil, fmt.Errorf("seeds, sweep: neither is set; run the config as one run or a suite")
	}
	g := &Grid{Dir: filepath.Join(cfg.Out, cfg.Name), Config: cfg, Points: sweepPoints(cfg.Sweep), Seeds: cfg.Seeds}
	if len(g.Seeds) == 0 {
		g.Seeds = []uint64{cfg.Seed}
	}
	members, err := g.members()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for pi, p := range g.Points {
		if problem := FolderName(p.Name); p.Name != "" && problem != "" {
			return nil, fmt.Errorf("sweep: point %s: its folder name is %s; sweep fewer keys or shorter values", p.Name, problem)
		}
		if names[p.Name] {
			return nil, fmt.Errorf("sweep: two points are both named %q (values that differ only in characters a folder name cannot hold)", p.Name)
		}
		names[p.Name] = true
		if err := g.addPoint(pi, members); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// members reads the suite's members, refusing a key that both a member and the sweep set.
func (g *Grid) members() ([]Member, error) {
	var out []Member
	for _, entry := range g.Config.Suite {
		m, err := ParseMember(entry)
		if err != nil {
			return nil, err
		}
		for _, kv := range m.Sets {
			for _, a := range g.Config.Sweep {
				if kv[0] == a.Key {
					return nil, fmt.Errorf("sweep: %s is also set by suite member %s; a key is either swept or set by members", a.Key, m.Label)
				}
			}
		}
		out = append(out, m)
		g.Members = append(g.Members, m.Label)
	}
	return out, nil
}

// addPoint adds the runs of point pi: each member's (or the one config's) at every seed.
func (g *Grid) addPoint(pi int, members []Member) error {
	p := g.Points[pi]
	pc := g.Config
	pc.Seeds, pc.Sweep, pc.Suite, pc.SuiteTable = nil, nil, nil, ""
	pc, err := pc.With("sweep point "+p.Name, p.Sets)
	if err != nil {
		return err
	}
	mcs := []Config{pc}
	if len(members) > 0 {
		mcs = nil
		for _, m := range members {
			mc, err := m.Apply(pc)
			if err != nil {
				return err
			}
			mcs = append(mcs, mc)
		}
	}
	for mi, mc := range mcs {
		for si, seed := range g.Seeds {
			lc := mc
			lc.Seed = seed
			parts := []string{g.Dir}
			if p.Name != "" {
				parts = append(parts, p.Name)
			}
			if len(members) > 0 {
				parts = append(parts, members[mi].Label)
			}
			if len(g.Config.Seeds) > 0 {
				parts = append(parts, fmt.Sprintf("seed-%d", seed))
			}
			dir := filepath.Join(parts...)
			lc.Out, lc.Name = filepath.Dir(dir), filepath.Base(dir)
			lc = lc.Resolved()
			if err := lc.Validate(); err != nil {
				return fmt.Errorf("%s: %w", g.Where(pi, mi, si), err)
			}
			g.Runs = append(g.Runs, Leaf{Point: pi, Member: mi, Seed: si, Config: lc})
		}
	}
	return nil
}

// Where names a run of the grid for messages: "sweep point data.alpha=0.1, suite member
// fedavg, seed 2".
func (g *Grid) Where(point, member, seed int) string {
	var parts []string
	if p := g.Points[point]; p.Name != "" {
		parts = append(parts, "sweep point "+p.Name)
	}
	if len(g.Members) > 0 {
		parts = append(parts, "suite member "+g.Members[member])
	}
	if len(g.Config.Seeds) > 0 {
		parts = append(parts, fmt.Sprintf("seed %d", g.Seeds[seed]))
	}
	return strings.Join(parts, ", ")
}

// Place is leaf l's place in the grid: its member's label and its sweep point's values.
func (g *Grid) Place(l Leaf) Place {
	var p Place
	if len(g.Members) > 0 {
		p.Member = g.Members[l.Member]
	}
	for _, kv := range g.Points[l.Point].Sets {
		p.Sweep = append(p.Sweep, SweepValue{Key: kv[0], Value: kv[1]})
	}
	return p
}

// MemberNames are the columns of the grid's tables: the suite's labels, or the algorithm.
func (g *Grid) MemberNames() []string {
	if len(g.Members) > 0 {
		return g.Members
	}
	return []string{g.Runs[0].Config.Algorithm.Name}
}

// sweepPoints is the cross product of the axes' values, the first axis varying slowest;
// one unnamed point without a sweep.
func sweepPoints(axes []SweepAxis) []Point {
	pts := []Point{{}}
	for _, a := range axes {
		var next []Point
		for _, p := range pts {
			for _, v := range a.Values {
				q := Point{Values: append(append([]string{}, p.Values...), v),
					Sets: append(append([][2]string{}, p.Sets...), [2]string{a.Key, v})}
				next = append(next, q)
			}
		}
		pts = next
	}
	for i := range pts {
		var parts []string
		for _, kv := range pts[i].Sets {
			parts = append(parts, kv[0]+"="+FolderSafe(kv[1]))
		}
		pts[i].Name = strings.Join(parts, ",")
	}
	return pts
}

// FolderSafe turns a value into part of a folder or file name: no separators, no spaces.
func FolderSafe(v string) string {
	return strings.NewReplacer("/", "_", `\`, "_", " ", "", ":", "_").Replace(v)
}
