package data

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"pfl/engine/internal/chart"
)

// Manifest records a partition: per-client counts per class and a hash of the exact
// assignment, so two runs can be compared and a run can be reproduced.
type Manifest struct {
	Config     PartitionConfig `json:"config"`
	Dataset    string          `json:"dataset"`
	Classes    int             `json:"classes"`
	ClassNames []string        `json:"class_names,omitempty"` // the dataset's, where it names its classes
	Hash       string          `json:"hash"`                  // SHA-256 of every client's train and test indices
	TrainCount [][]int         `json:"train_count"`           // [client][class]
	TestCount  [][]int         `json:"test_count"`
	Novel      []int           `json:"novel,omitempty"`
	Noise      []float64       `json:"noise,omitempty"`
}

// Manifest summarizes f.
func (f *Federated) Manifest() Manifest {
	m := Manifest{Config: f.Config, Dataset: f.Train.Name, Classes: f.Train.Classes, ClassNames: f.Train.ClassNames, Novel: f.Part.Novel, Noise: f.Part.Noise}
	count := func(x *Images, parts [][]int) [][]int {
		out := make([][]int, len(parts))
		for j, p := range parts {
			out[j] = make([]int, x.Classes)
			for _, i := range p {
				out[j][x.Labels[i]]++
			}
		}
		return out
	}
	m.TrainCount, m.TestCount = count(f.Train, f.Part.Train), count(f.Test, f.Part.Test)
	h := sha256.New()
	var buf [8]byte
	for _, parts := range [][][]int{f.Part.Train, f.Part.Test} {
		for _, p := range parts {
			binary.LittleEndian.PutUint64(buf[:], uint64(len(p)))
			h.Write(buf[:])
			for _, i := range p {
				binary.LittleEndian.PutUint64(buf[:], uint64(i))
				h.Write(buf[:])
			}
		}
	}
	m.Hash = hex.EncodeToString(h.Sum(nil))
	return m
}

// WriteManifest writes f's manifest as JSON to dir/partition.json and its label heatmap to
// dir/partition.png and dir/partition.svg (the report's, sharp at any width).
func (f *Federated) WriteManifest(dir string) error {
	m := f.Manifest()
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "partition.json"), b, 0o644); err != nil {
		return fmt.Errorf("data: manifest: %w", err)
	}
	if err := m.Heatmap(filepath.Join(dir, "partition.png")); err != nil {
		return err
	}
	return m.Heatmap(filepath.Join(dir, "partition.svg"))
}

// countGrid adapts a [client][class] count table to plotter.GridXYZ: x is the client,
// y the class.
type countGrid struct{ c [][]int }

func (g countGrid) Dims() (int, int) { return len(g.c), len(g.c[0]) }
func (g countGrid) Z(x, y int) float64 {
	if g.c[x][y] == 0 {
		return math.NaN() // drawn white (the heat map's NaN colour): a count of 1 rounds to the first colour
	}
	return float64(g.c[x][y])
}
func (g countGrid) X(x int) float64 { return float64(x) }
func (g countGrid) Y(y int) float64 { return float64(y) }

// Heatmap draws the train label distribution (clients × classes, colour = samples) into
// path (.png or .svg):
// white where a client has no sample of a class, blues of growing darkness up to the
// largest count (chart.Sequential), with a labelled colour bar.
func (m Manifest) Heatmap(path string) error {
	if len(m.TrainCount) == 0 || m.Classes == 0 {
		return fmt.Errorf("data: heatmap: empty partition")
	}
	var hi float64
	for _, row := range m.TrainCount {
		for _, v := range row {
			hi = max(hi, float64(v))
		}
	}
	pal := chart.NewSequential(0, max(hi, 1))
	h := plotter.NewHeatMap(countGrid{m.TrainCount}, pal.Palette(256))
	h.NaN, h.Min, h.Max = color.White, 0, max(hi, 1)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s, %d clients: train samples per class", m.Dataset, m.partitionName(), len(m.TrainCount))
	p.X.Label.Text = "client"
	p.Y.Label.Text = "class"
	p.X.Tick.Marker, p.Y.Tick.Marker = chart.IntTicks{}, chart.IntTicks{}
	p.Add(h)
	w := vg.Length(4+0.08*float64(len(m.TrainCount))) * vg.Inch
	ht := vg.Length(3+0.05*float64(m.Classes)) * vg.Inch
	// a few clients: still as wide as the title
	w = max(w, p.Title.TextStyle.Rectangle(p.Title.Text).Size().X+0.5*vg.Inch)
	// the colour scale: samples per cell, 0 to the largest count
	bar := plot.New()
	cb := &plotter.ColorBar{ColorMap: pal, Vertical: true}
	bar.Add(cb)
	bar.HideX()
	bar.Y.Label.Text = "train samples"
	bar.Y.Label.Padding = vg.Points(8) // clear of the tick labels
	bar.Y.Padding, bar.X.Padding = 0, 0
	if err := chart.SaveBeside(p, bar, 0.9*vg.Inch, min(w, 30*vg.Inch)+0.9*vg.Inch, min(ht, 20*vg.Inch), path); err != nil {
		return fmt.Errorf("data: heatmap: %w", err)
	}
	return nil
}

// partitionName is the partition method with its parameter: Dirichlet's concentration α,
// the pathological split's classes per client.
func (m Manifest) partitionName() string {
	c := m.Config
	switch c.Method {
	case MethodDirichlet, MethodDomainDirichlet:
		return fmt.Sprintf("%s α = %g", c.Method, c.Alpha)
	case MethodPachinko:
		return fmt.Sprintf("%s α = %g, β = %g", c.Method, c.Alpha, c.Beta)
	case MethodPathological:
		return fmt.Sprintf("%s, %d classes per client", c.Method, c.ClassesPerClient)
	}
	return string(c.Method)
}
