package experiment

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// node is an element of a parsed page.
type node struct {
	name string
	attr map[string]string
	kids []*node
	text strings.Builder // the text directly inside
}

// parsePage parses a report strictly as XML: it must be well formed.
func parsePage(t *testing.T, path string) *node {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := &node{name: "#document"}
	stack := []*node{root}
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("%s is not well formed: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.kids = append(top.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			stack[len(stack)-1].text.Write(tok)
		}
	}
	if len(stack) != 1 {
		t.Fatalf("%s: %d elements left open", path, len(stack)-1)
	}
	return root
}

// all is every element named name under n, in document order.
func (n *node) all(name string) []*node {
	var out []*node
	for _, k := range n.kids {
		if k.name == name {
			out = append(out, k)
		}
		out = append(out, k.all(name)...)
	}
	return out
}

// byID is the element with id.
func (n *node) byID(id string) *node {
	for _, k := range n.kids {
		if k.attr["id"] == id {
			return k
		}
		if f := k.byID(id); f != nil {
			return f
		}
	}
	return nil
}

// content is the text inside n and its descendants.
func (n *node) content() string {
	s := n.text.String()
	for _, k := range n.kids {
		s += k.content()
	}
	return s
}

// checkSelfContained: no script or embedded documents, every link relative to a file
// that exists beside the page, every image an inline PNG that decodes or an inline SVG
// that parses (and reaches nothing outside it).
func checkSelfContained(t *testing.T, path string, doc *node) (images int) {
	t.Helper()
	for _, bad := range []string{"script", "link", "iframe", "object", "embed"} {
		if len(doc.all(bad)) > 0 {
			t.Errorf("%s has a <%s>", path, bad)
		}
	}
	var walk func(n *node)
	walk = func(n *node) {
		for k, v := range n.attr {
			if (k == "src" || k == "href") && (strings.Contains(v, "://") || strings.HasPrefix(v, "//")) {
				t.Errorf("%s: <%s %s=%q> reaches the network", path, n.name, k, v)
			}
		}
		for _, c := range n.kids {
			walk(c)
		}
	}
	walk(doc)
	for _, a := range doc.all("a") {
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), a.attr["href"])); err != nil {
			t.Errorf("%s: link %q: %v", path, a.attr["href"], err)
		}
	}
	for _, img := range doc.all("img") {
		src := img.attr["src"]
		svg, isSVG := strings.CutPrefix(src, "data:image/svg+xml;base64,")
		b64, ok := strings.CutPrefix(src, "data:image/png;base64,")
		if !ok && !isSVG {
			t.Fatalf("%s: image %.40q is not an inline PNG or SVG", path, src)
		}
		if isSVG {
			b64 = svg
		}
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatal(err)
		}
		if isSVG {
			checkSVG(t, path, img.attr["alt"], b)
		} else if _, err := png.DecodeConfig(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: image %q: %v", path, img.attr["alt"], err)
		}
		images++
	}
	return images
}

// checkSVG checks that b, an inline SVG image of page path, parses as XML with an <svg>
// root and links nothing (an image's SVG may not fetch anything anyway).
func checkSVG(t *testing.T, path, alt string, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: SVG image %q: %v", path, alt, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			for _, a := range se.Attr {
				if a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#") && !strings.HasPrefix(a.Value, "data:") {
					t.Errorf("%s: SVG image %q links %q", path, alt, a.Value)
				}
			}
		}
	}
	if root != "svg" {
		t.Fatalf("%s: image %q is XML rooted at <%s>, not an SVG", path, alt, root)
	}
}

// rows is the table's rows as the text of their cells.
func rows(tab *node) [][]string {
	var out [][]string
	for _, tr := range tab.all("tr") {
		var cells []string
		for _, c := range tr.kids {
			cells = append(cells, strings.TrimSpace(c.content()))
		}
		out = append(out, cells)
	}
	return out
}

// TestReport trains a toy suite (FedTP, Local, FedAvg), draws its maps and writes its
// reports: the pages parse, hold no external reference, link to each other, inline every
// figure as a PNG, and their tables hold the members' summary.json numbers.
func TestReport(t *testing.T) {
	cfg := filled(config.Config{Name: "rep", Out: t.TempDir(), Suite: []string{"fedtp", "local", "fedavg"},
		Data:      config.Data{Dataset: "synthetic:200", Clients: 5, Partition: "pathological", ClassesPerClient: 2},
		Model:     config.Model{Preset: "tiny-vit", Depth: new(int64(2)), Dim: new(int64(32)), Heads: new(int64(2)), HeadDim: new(int64(16)), MLP: new(int64(64))},
		Algorithm: fl.Settings{Hyper: fl.HyperSettings{Embed: ptr(int64(8)), Hidden: ptr(int64(16))}},
		Train:     config.Train{Rounds: 2, Participation: 0.4, Batch: 16, LR: 0.05, EvalEvery: 1}})
	res, err := RunSuite(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Maps(res.Dir, MapOptions{Images: 2, Clients: []int{0, 2}}); err != nil {
		t.Fatal(err)
	}
	pages, err := report.Write(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 4 || pages[0] != filepath.Join(res.Dir, "report.html") || pages[1] != filepath.Join(res.Dir, "fedtp", "report.html") {
		t.Fatalf("pages %v", pages)
	}
	doc := parsePage(t, pages[0])
	// accuracy, distribution, gain density, partition, two maps sheets, fedtp's t-SNE
	if n := checkSelfContained(t, pages[0], doc); n != 7 {
		t.Errorf("the suite page has %d images, want 7", n)
	}
	if title := doc.all("title"); len(title) != 1 || !strings.Contains(title[0].content(), "rep") {
		t.Errorf("title %v", title)
	}
	results := rows(doc.byID("results-table"))
	if len(results) != 4 {
		t.Fatalf("results table: %v", results)
	}
	resources := rows(doc.byID("resources-table"))
	for i, r := range res.Runs {
		b, err := os.ReadFile(filepath.Join(r.Dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s rundir.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		pct := func(v float64) string { return fmt.Sprintf("%.2f", 100*v) }
		want := []string{s.Name, pct(s.TailMean) + " ± " + pct(s.TailStd), "2", pct(s.FinalMean) + " ± " + pct(s.FinalStd),
			pct(s.P10) + " / " + pct(s.P50) + " / " + pct(s.P90), pct(s.Worst10), pct(s.FinalMicro), "2"}
		got := results[i+1]
		for j, w := range want {
			if got[j] != w {
				t.Errorf("results row %d cell %d = %q, summary.json gives %q", i, j, got[j], w)
			}
		}
		commas := func(cell string) string { return strings.ReplaceAll(cell, ",", "") }
		if commas(resources[i+1][1]) != strconv.FormatInt(s.Resources.StoredParams, 10) || commas(resources[i+1][3]) != strconv.FormatInt(s.Resources.UpParams, 10) {
			t.Errorf("resources row %v, summary %+v", resources[i+1], s.Resources)
		}
		memberPage(t, r.Dir, s.Name, cfg.Algorithm.Name)
	}
	// results.md rendered: its tables as tables (a cell holding fedtp), no raw Markdown
	md := doc.byID("results-md-body")
	if md == nil || len(md.all("table")) == 0 || !slices.ContainsFunc(rows(md.all("table")[0]), func(r []string) bool { return len(r) > 0 && r[0] == "fedtp" }) {
		t.Error("results.md's table is not on the suite page as a table")
	} else if strings.Contains(md.content(), "|---") {
		t.Error("results.md's Markdown shows on the suite page unrendered")
	}
	// the suite's config names each member's algorithm, not the default the suite file leaves
	memberKeys := rows(doc.byID("member-config-table"))
	if len(memberKeys) < 2 || !slices.Equal(memberKeys[0], []string{"key", "fedtp", "local", "fedavg"}) ||
		!slices.ContainsFunc(memberKeys, func(r []string) bool {
			return slices.Equal(r, []string{"algorithm.name", `"fedtp"`, `"local"`, `"fedavg"`})
		}) {
		t.Errorf("member keys table %v, want a column per member and their algorithm.name", memberKeys)
	}
	for _, r := range rows(doc.byID("config-table")) {
		if len(r) > 0 && r[0] == "algorithm.name" {
			t.Errorf("the suite's config table shows %v: one algorithm for three members", r)
		}
	}
	t.Run("chromium", func(t *testing.T) { screenshot(t, pages[0]) })
	// a single run's page has no navigation
	single := smallRun(t.TempDir(), "one")
	r, err := Run(context.Background(), single, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pages, err = report.Write(r.Dir); err != nil || len(pages) != 1 {
		t.Fatalf("single run: %v %v", pages, err)
	}
	one := parsePage(t, pages[0])
	if checkSelfContained(t, pages[0], one); len(one.all("nav")) != 0 || len(rows(one.byID("results-table"))) != 2 {
		t.Error("the single run's page")
	}
}

// memberPage checks a suite member's page in dir: self-contained, its figures, its links
// to the suite's and the other members' pages, the keys it sets beyond the suite's config
// (algorithm.name, unless it is suite's own, suiteAlg) and its machine.
func memberPage(t *testing.T, dir, name, suiteAlg string) {
	t.Helper()
	page := filepath.Join(dir, "report.html")
	mdoc := parsePage(t, page)
	n := checkSelfContained(t, page, mdoc)
	want2 := 5 // accuracy, loss, distribution, sorted clients, partition
	if name == "fedtp" {
		want2++ // t-SNE
	}
	if n != want2 {
		t.Errorf("%s's page has %d images, want %d", name, n, want2)
	}
	if len(mdoc.all("a")) != 4 { // the suite and the three members
		t.Errorf("%s's page links: %d", name, len(mdoc.all("a")))
	}
	// the keys a member sets beyond the suite's config: algorithm.name, unless it is the
	// suite's own (fedavg, the default)
	var differs [][]string
	if tab := mdoc.byID("differs-table"); tab != nil {
		differs = rows(tab)
	}
	if name == suiteAlg {
		if differs != nil {
			t.Errorf("%s, the suite's own algorithm, sets %v", name, differs)
		}
	} else if len(differs) != 1 || differs[0][0] != "algorithm.name" || differs[0][1] != `"`+name+`"` {
		t.Errorf("%s sets %v", name, differs)
	}
	host, _ := os.Hostname()
	if m := rows(mdoc.byID("machine-table")); len(m) != 2 || m[1][1] != host {
		t.Errorf("%s's machines %v", name, m)
	}
}
