package experiment

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
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
// that exists beside the page, every image an inline PNG that decodes.
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
		b64, ok := strings.CutPrefix(src, "data:image/png;base64,")
		if !ok {
			t.Fatalf("%s: image %.40q is not an inline PNG", path, src)
		}
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.DecodeConfig(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: image %q: %v", path, img.attr["alt"], err)
		}
		images++
	}
	return images
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
	if !strings.Contains(doc.byID("results-md").content()+doc.all("pre")[0].content(), "| fedtp |") {
		t.Error("results.md is not on the suite page")
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
