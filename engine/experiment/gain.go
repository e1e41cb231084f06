package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"

	"pfl/engine/fl"
	"pfl/engine/internal/atomicfile"
	"pfl/engine/internal/chart"
)

// gainDensity writes FedPerfix's Fig. 3 for a suite with a "local" member: for every
// other member, the density of its per-client accuracy gain over Local (the last
// evaluation, clients that train), as dir/gain_density.{png,svg}, and the gains
// themselves as dir/gains.csv (client, member, gain in accuracy points). A suite without
// a local member, or whose runs have no evaluation, writes nothing.
func gainDensity(dir string, runs []*Result) error {
	var base []float64
	for _, r := range runs {
		if fl.Keeps(r.Summary.Name) == fl.KeepEverything { // the local member
			base = lastAccuracy(r)
		}
	}
	if base == nil {
		return nil
	}
	var csv strings.Builder
	csv.WriteString("client,member,gain\n")
	var lines []any
	for _, r := range runs {
		acc := lastAccuracy(r)
		if fl.Keeps(r.Summary.Name) == fl.KeepEverything || len(acc) != len(base) {
			continue
		}
		novel := r.Novel
		var gains []float64
		for c := range acc {
			if slices.Contains(novel, c) {
				continue
			}
			g := 100 * (acc[c] - base[c])
			gains = append(gains, g)
			fmt.Fprintf(&csv, "%d,%s,%.4f\n", c, r.Summary.Name, g)
		}
		lines = append(lines, r.Summary.Name, densityCurve(chart.Values(gains), 200)) // the CSV keeps a NaN gain
	}
	if len(lines) == 0 {
		return nil
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, "gains.csv"), []byte(csv.String())); err != nil {
		return err
	}
	return save(dir, "gain_density", "per-client accuracy gain over Local", "gain (accuracy points)", "density", lines...)
}

// lastAccuracy is a run's per-client accuracies at its last evaluation (nil if none).
func lastAccuracy(r *Result) []float64 {
	for i := len(r.History) - 1; i >= 0; i-- {
		if e := r.History[i].Eval; e != nil {
			return e.Accuracy
		}
	}
	return nil
}

// densityCurve is a Gaussian kernel density estimate of xs at points evenly spaced over
// [min − 3h, max + 3h], with Silverman's bandwidth h = 0.9·min(σ, IQR/1.34)·n^(−1/5)
// (the rule of thumb seaborn's and scipy's plots of such densities default to); xs
// all equal gets h = 1 point.
func densityCurve(xs []float64, points int) plotter.XYs {
	n := float64(len(xs))
	if n == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var mean, ss float64
	for _, x := range s {
		mean += x / n
	}
	for _, x := range s {
		ss += (x - mean) * (x - mean)
	}
	sigma := math.Sqrt(ss / math.Max(n-1, 1))
	q := func(p float64) float64 { // linear interpolation between order statistics
		i := p * (n - 1)
		lo := int(math.Floor(i))
		hi := min(lo+1, len(s)-1)
		return s[lo] + (i-float64(lo))*(s[hi]-s[lo])
	}
	spread := sigma
	if iqr := (q(0.75) - q(0.25)) / 1.34; iqr > 0 {
		spread = math.Min(sigma, iqr)
	}
	h := 0.9 * spread * math.Pow(n, -0.2)
	if h <= 0 || math.IsNaN(h) {
		h = 1
	}
	lo, hi := s[0]-3*h, s[len(s)-1]+3*h
	out := make(plotter.XYs, points)
	for i := range out {
		x := lo + (hi-lo)*float64(i)/float64(points-1)
		var d float64
		for _, v := range s {
			z := (x - v) / h
			d += math.Exp(-z * z / 2)
		}
		out[i] = plotter.XY{X: x, Y: d / (n * h * math.Sqrt(2*math.Pi))}
	}
	return out
}
