package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"pfl/engine/rng"
)

// The partitions of the three papers. Each takes labels (and what else it needs) and a
// random stream, and returns per-client lists of indices into the labels it was given.

// byClass lists the indices of each class, shuffled.
func byClass(labels []int64, classes int, r *rand.Rand) [][]int {
	out := make([][]int, classes)
	for i, l := range labels {
		out[l] = append(out[l], i)
	}
	for _, idx := range out {
		r.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
	}
	return out
}

// splitByShares cuts idx into len(shares) consecutive pieces with the given proportions,
// at floor(cumsum·n) as NumPy's (cumsum(p)*len).astype(int) does. The remainder goes to the
// last client with a positive share: a cumulative sum that rounds to 0.999… must not hand
// a sample to a trailing client whose share is zero.
func splitByShares(idx []int, shares []float64) [][]int {
	out := make([][]int, len(shares))
	last := len(shares) - 1
	for last > 0 && shares[last] <= 0 {
		last--
	}
	var cum float64
	prev := 0
	for j, s := range shares {
		cum += s
		cut := min(int(cum*float64(len(idx))+1e-9), len(idx))
		if j >= last {
			cut = len(idx)
		}
		cut = max(cut, prev)
		out[j] = idx[prev:cut]
		prev = cut
	}
	return out
}

// IID shuffles n indices and cuts them into clients parts of (almost) equal size, as
// NumPy's array_split.
func IID(n, clients int, r *rand.Rand) ([][]int, error) {
	if clients < 1 || clients > n {
		return nil, fmt.Errorf("data: iid: %d clients for %d samples", clients, n)
	}
	perm := r.Perm(n)
	out := make([][]int, clients)
	base, extra := n/clients, n%clients
	start := 0
	for j := range out {
		size := base
		if j < extra {
			size++
		}
		out[j] = perm[start : start+size]
		start += size
	}
	return out, nil
}

// Shares holds, for every class, the fraction of that class each client receives. A test
// split drawn with the same shares has each client's train label distribution (FedTP's
// convention).
type Shares [][]float64 // [class][client]

// Split cuts the samples of every class among the clients by the shares.
func (sh Shares) Split(labels []int64, r *rand.Rand) [][]int {
	clients := len(sh[0])
	out := make([][]int, clients)
	for k, idx := range byClass(labels, len(sh), r) {
		for j, part := range splitByShares(idx, sh[k]) {
			out[j] = append(out[j], part...)
		}
	}
	return out
}

// DirichletConfig is the per-class Dirichlet label skew of NIID-Bench, FedTP and FedPerfix.
type DirichletConfig struct {
	Alpha    float64 // concentration; smaller is more skewed (FedTP 0.3/0.5, FedPerfix 0.5)
	MinSize  int     // every client needs at least this many samples (FedTP 10, FedPerfix 256)
	MaxDraws int     // redraws before giving up with an error; 0 means 1000
}

// Dirichlet draws, for every class, client shares p ~ Dir(α·1); with the reference code's
// balancing, a client already holding n/clients samples gets no more (its share is zeroed
// and the rest renormalized). The whole draw is repeated until every client has MinSize
// samples — at most MaxDraws times, then it is an error rather than an endless loop.
// minTest, if > 0, also requires that many samples per client in the test labels split by
// the same shares (FedTP requires 10 of each).
func Dirichlet(labels []int64, classes, clients int, c DirichletConfig, testLabels []int64, minTest int, r *rand.Rand) ([][]int, Shares, error) {
	switch {
	case !(c.Alpha > 0) || math.IsInf(c.Alpha, 0):
		return nil, nil, fmt.Errorf("data: dirichlet: alpha = %g, want > 0", c.Alpha)
	case clients < 1 || clients > len(labels):
		return nil, nil, fmt.Errorf("data: dirichlet: %d clients for %d samples", clients, len(labels))
	case c.MinSize*clients > len(labels):
		return nil, nil, fmt.Errorf("data: dirichlet: %d clients × minimum %d > %d samples", clients, c.MinSize, len(labels))
	}
	draws := c.MaxDraws
	if draws <= 0 {
		draws = 1000
	}
	full := float64(len(labels)) / float64(clients)
	for d := 0; d < draws; d++ {
		sizes := make([]int, clients)
		shares := make(Shares, classes)
		out := make([][]int, clients)
		for k, idx := range byClass(labels, classes, r) {
			p := rng.Dirichlet(r, c.Alpha, clients)
			var sum float64
			q := make([]float64, clients)
			for j := range p {
				if float64(sizes[j]) < full {
					q[j] = p[j]
				}
				sum += q[j]
			}
			if sum == 0 { // every client is full: keep the raw draw
				copy(q, p)
				sum = 1
			}
			for j := range q {
				q[j] /= sum
			}
			shares[k] = q
			for j, part := range splitByShares(idx, q) {
				out[j] = append(out[j], part...)
				sizes[j] += len(part)
			}
		}
		if slices.Min(sizes) < c.MinSize {
			continue
		}
		if minTest > 0 {
			small := false
			for _, t := range shares.Split(testLabels, r) {
				if len(t) < minTest {
					small = true
				}
			}
			if small {
				continue
			}
		}
		return out, shares, nil
	}
	return nil, nil, fmt.Errorf("data: dirichlet: after %d draws some client still has fewer than %d samples "+
		"(alpha %g, %d clients, %d samples): raise alpha, lower the minimum or use fewer clients", draws, c.MinSize, c.Alpha, clients, len(labels))
}

// Pathological gives every client exactly k classes (pFedHN's and FedTP's "noniid-labeluni":
// 2 of 10, 10 of 100). Each class is shared by k·clients/classes clients with shares drawn
// from U(0.4, 0.6) and normalized; clients pick their classes one at a time among those
// with the most remaining places (greedy balancing). Every sample is used exactly once.
func Pathological(labels []int64, classes, clients, k int, r *rand.Rand) ([][]int, Shares, error) {
	switch {
	case k < 1 || k > classes:
		return nil, nil, fmt.Errorf("data: pathological: %d classes per client, but the data has %d classes", k, classes)
	case clients < 1:
		return nil, nil, fmt.Errorf("data: pathological: %d clients", clients)
	case k*clients%classes != 0:
		return nil, nil, fmt.Errorf("data: pathological: %d classes per client × %d clients is not a multiple of %d classes", k, clients, classes)
	case k*clients/classes > len(labels)/classes:
		return nil, nil, fmt.Errorf("data: pathological: more clients per class (%d) than samples per class", k*clients/classes)
	}
	perClass := k * clients / classes
	remaining := make([]int, classes)
	rates := make([][]float64, classes)
	for c := range remaining {
		remaining[c] = perClass
		var sum float64
		rates[c] = make([]float64, perClass)
		for i := range rates[c] {
			rates[c][i] = 0.4 + 0.2*r.Float64()
			sum += rates[c][i]
		}
		for i := range rates[c] {
			rates[c][i] /= sum
		}
	}
	shares := make(Shares, classes)
	for c := range shares {
		shares[c] = make([]float64, clients)
	}
	for j := 0; j < clients; j++ {
		for pick := 0; pick < k; pick++ {
			best, cands := 0, []int(nil)
			for c := 0; c < classes; c++ {
				if shares[c][j] > 0 || remaining[c] == 0 {
					continue
				}
				switch {
				case remaining[c] > best:
					best, cands = remaining[c], []int{c}
				case remaining[c] == best:
					cands = append(cands, c)
				}
			}
			if len(cands) == 0 {
				return nil, nil, fmt.Errorf("data: pathological: client %d found no class left (greedy assignment failed)", j)
			}
			c := cands[r.IntN(len(cands))]
			remaining[c]--
			shares[c][j] = rates[c][remaining[c]]
		}
	}
	return shares.Split(labels, r), shares, nil
}

// Pachinko is the two-stage split of CIFAR-100 (FedTP's "noniid-labeldir100", after Reddi
// et al.): every client draws coarse-label weights ~ Dir(alpha) and, per coarse label,
// fine-label weights ~ Dir(beta = 10); then it draws n/clients samples one at a time —
// coarse, then fine — without replacement, dropping exhausted labels and renormalizing.
func Pachinko(fine, coarse []int64, fineClasses, coarseClasses, clients int, alpha, beta float64, r *rand.Rand) ([][]int, error) {
	switch {
	case !(alpha > 0) || !(beta > 0):
		return nil, fmt.Errorf("data: pachinko: alpha = %g and beta = %g must be > 0", alpha, beta)
	case len(coarse) != len(fine):
		return nil, fmt.Errorf("data: pachinko: %d coarse labels for %d samples", len(coarse), len(fine))
	case clients < 1 || clients > len(fine):
		return nil, fmt.Errorf("data: pachinko: %d clients for %d samples", clients, len(fine))
	}
	pool := byClass(fine, fineClasses, r)   // remaining samples per fine label
	finesOf := make([][]int, coarseClasses) // fine labels of each coarse label
	for f := 0; f < fineClasses; f++ {
		if len(pool[f]) == 0 {
			continue
		}
		c := coarse[pool[f][0]]
		for _, i := range pool[f] {
			if coarse[i] != c {
				return nil, fmt.Errorf("data: pachinko: fine label %d appears under coarse labels %d and %d", f, c, coarse[i])
			}
		}
		finesOf[c] = append(finesOf[c], f)
	}
	per := len(fine) / clients
	out := make([][]int, clients)
	for j := range out {
		cw := rng.Dirichlet(r, alpha, coarseClasses)
		fw := make([][]float64, coarseClasses)
		for c := range fw {
			fw[c] = rng.Dirichlet(r, beta, max(len(finesOf[c]), 1))
		}
		for len(out[j]) < per {
			c := weighted(r, cw, func(c int) bool { return coarseLeft(pool, finesOf[c]) })
			if c < 0 {
				break // every label exhausted
			}
			fi := weighted(r, fw[c], func(i int) bool { return i < len(finesOf[c]) && len(pool[finesOf[c][i]]) > 0 })
			f := finesOf[c][fi]
			last := len(pool[f]) - 1
			out[j] = append(out[j], pool[f][last])
			pool[f] = pool[f][:last]
		}
	}
	return out, nil
}

func coarseLeft(pool [][]int, fines []int) bool {
	for _, f := range fines {
		if len(pool[f]) > 0 {
			return true
		}
	}
	return false
}

// weighted draws an index with probability proportional to w among those ok allows,
// or -1 if none is allowed (the renormalization of exhausted labels).
func weighted(r *rand.Rand, w []float64, ok func(int) bool) int {
	var sum float64
	for i, x := range w {
		if ok(i) {
			sum += x
		}
	}
	if sum == 0 {
		// weights underflowed to zero: fall back to uniform among the allowed
		var allowed []int
		for i := range w {
			if ok(i) {
				allowed = append(allowed, i)
			}
		}
		if len(allowed) == 0 {
			return -1
		}
		return allowed[r.IntN(len(allowed))]
	}
	u := r.Float64() * sum
	last := -1
	for i, x := range w {
		if !ok(i) {
			continue
		}
		last = i
		if u < x {
			return i
		}
		u -= x
	}
	return last
}

// DomainDirichlet splits each domain's samples among its own clientsPerDomain clients with
// a per-class Dirichlet (FedPerfix's Office-Home: 4 clients per domain, α = 1.0). Clients
// are numbered domain by domain.
func DomainDirichlet(labels, domains []int64, classes, numDomains, clientsPerDomain int, c DirichletConfig, r *rand.Rand) ([][]int, error) {
	if len(domains) != len(labels) {
		return nil, fmt.Errorf("data: domain dirichlet: %d domain indices for %d samples", len(domains), len(labels))
	}
	var out [][]int
	for d := 0; d < numDomains; d++ {
		var idx []int
		var lab []int64
		for i, dom := range domains {
			if int(dom) == d {
				idx = append(idx, i)
				lab = append(lab, labels[i])
			}
		}
		parts, _, err := Dirichlet(lab, classes, clientsPerDomain, c, nil, 0, r)
		if err != nil {
			return nil, fmt.Errorf("domain %d: %w", d, err)
		}
		for _, p := range parts {
			client := make([]int, len(p))
			for i, local := range p {
				client[i] = idx[local]
			}
			out = append(out, client)
		}
	}
	return out, nil
}

// CoarseGroups assigns each coarse class to clients/coarseClasses clients and splits each
// of its fine classes evenly among them (FedTP's "iid-label100", used for the t-SNE of the
// client embeddings: clients of one coarse class should cluster).
func CoarseGroups(fine, coarse []int64, fineClasses, coarseClasses, clients int, r *rand.Rand) ([][]int, error) {
	if clients < coarseClasses || clients%coarseClasses != 0 {
		return nil, fmt.Errorf("data: coarse groups: %d clients is not a multiple of %d coarse classes", clients, coarseClasses)
	}
	per := clients / coarseClasses
	out := make([][]int, clients)
	for f, idx := range byClass(fine, fineClasses, r) {
		if len(idx) == 0 {
			continue
		}
		g := int(coarse[idx[0]])
		parts, err := IID(len(idx), per, r)
		if err != nil {
			return nil, fmt.Errorf("data: coarse groups: fine class %d: %w", f, err)
		}
		for j, p := range parts {
			for _, i := range p {
				out[g*per+j] = append(out[g*per+j], idx[i])
			}
		}
	}
	return out, nil
}

// NoiseLevels is the feature-imbalance schedule of FedTP: client i gets Gaussian noise of
// standard deviation sigmaMax·i/(N−1), added after normalization. Unlike the reference
// code we do not clamp afterwards: its clamp to [0, 255] on normalized pixels zeroes every
// negative value, for every client, client 0 included.
func NoiseLevels(clients int, sigmaMax float64) []float64 {
	out := make([]float64, clients)
	for i := range out {
		if clients > 1 {
			out[i] = sigmaMax * float64(i) / float64(clients-1)
		}
	}
	return out
}

// TrainTestSplit cuts each client's samples into train and test parts as scikit-learn's
// train_test_split (FedPerfix's convention, after merging the official splits): shuffled,
// with ceil(testFrac·n) test samples.
func TrainTestSplit(parts [][]int, trainFrac float64, r *rand.Rand) (train, test [][]int, err error) {
	if !(trainFrac > 0 && trainFrac < 1) {
		return nil, nil, fmt.Errorf("data: train fraction %g, want (0, 1)", trainFrac)
	}
	for _, p := range parts {
		q := slices.Clone(p)
		r.Shuffle(len(q), func(a, b int) { q[a], q[b] = q[b], q[a] })
		nTest := int(math.Ceil((1 - trainFrac) * float64(len(q))))
		test = append(test, q[:nTest])
		train = append(train, q[nTest:])
	}
	return train, test, nil
}

// HoldOut picks round(frac·clients) clients as novel clients, never trained (FedTP's
// generalization study holds out 20%). The result is sorted.
func HoldOut(clients int, frac float64, r *rand.Rand) ([]int, error) {
	if frac < 0 || frac >= 1 {
		return nil, fmt.Errorf("data: hold-out fraction %g, want [0, 1)", frac)
	}
	n := int(math.Round(frac * float64(clients)))
	out := r.Perm(clients)[:n]
	slices.Sort(out)
	return out, nil
}
