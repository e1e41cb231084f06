package experiment

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"pfl/cuda"
	"pfl/engine/analysis"
	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/model"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// MapOptions choose what Maps draws. Zero values take the defaults.
type MapOptions struct {
	Images  int             // test images per client; default 4
	Clients []int           // the clients; default the first four
	Fusion  analysis.Fusion // rollout's head fusion; default max (FedTP's)
	// Discard is the fraction of each block's fused attention set to zero before rollout;
	// nil: 0.3 (FedTP's variant).
	Discard *float64
	Side    int     // an image is magnified to at least Side pixels; default 96
	Alpha   float64 // the heat map's opacity over the image; default 0.5
}

// The bounds of MapOptions: every image of a sheet is magnified to Side pixels, for every
// client, member and image, and the sheets are held in memory until written.
const (
	MaxMapSide    = 2048 // pixels of one image on a sheet
	MaxMapImages  = 64   // images per client (a sheet's columns)
	MaxMapClients = 64   // clients (one sheet each)
)

// check refuses options beyond the bounds, naming the option.
func (o MapOptions) check() error {
	switch {
	case o.Side < 1 || o.Side > MaxMapSide:
		return fmt.Errorf("maps: side %d: want 1 to %d pixels per image", o.Side, MaxMapSide)
	case o.Images < 1 || o.Images > MaxMapImages:
		return fmt.Errorf("maps: images %d: want 1 to %d per client", o.Images, MaxMapImages)
	case len(o.Clients) > MaxMapClients:
		return fmt.Errorf("maps: %d clients, want at most %d", len(o.Clients), MaxMapClients)
	case !(*o.Discard >= 0 && *o.Discard < 1):
		return fmt.Errorf("maps: discard %g not in [0, 1)", *o.Discard)
	}
	return nil
}

// sheetBytes is about the memory the sheets of members (and the input row) take: every
// image as RGBA, magnified to side pixels, as an overlay or picture and as a sheet cell.
func (o MapOptions) sheetBytes(members int) float64 {
	clients := len(o.Clients)
	if clients == 0 {
		clients = 4 // the default: the first four
	}
	px := float64(o.Side)
	return 2 * 4 * px * px * float64(o.Images) * float64(clients) * float64(members+1)
}

func (o MapOptions) withDefaults() MapOptions {
	o.Images = cmp.Or(o.Images, 4)
	o.Fusion = cmp.Or(o.Fusion, analysis.FusionMax)
	if o.Discard == nil {
		d := 0.3
		o.Discard = &d
	}
	o.Side = cmp.Or(o.Side, 96)
	o.Alpha = cmp.Or(o.Alpha, 0.5)
	return o
}

// Maps draws, from the last checkpoint of the run in dir or of every member of the suite
// in dir, what each client's model attends to on the same test images of that client:
// attention rollout for a ViT (FedTP Fig. 1, 5, 6), the magnitude of the last block's
// focal modulator for a FocalNet (TransFed Fig. 1), overlaid on the images. It writes
// dir/maps/client<c>.png per client (a row of inputs, then a row per member) and
// dir/maps/maps.json (report.DrawMaps). A member without a checkpoint, or whose model has
// neither attention nor focal modulation, or whose strategy predicts through a model of
// its own, is listed as skipped with the reason.
func Maps(dir string, o MapOptions) (*report.MapsInfo, error) {
	o = o.withDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := rundir.NotAGrid(dir, "pfl maps"); err != nil {
		return nil, err
	}
	cfg, err := rundir.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	members := []config.Config{cfg}
	if len(cfg.Suite) > 0 {
		if members, err = config.Members(cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
		}
	}
	need := o.sheetBytes(len(members))
	if have, where := memAvailable(); have > 0 && need > float64(have)/2 {
		return nil, fmt.Errorf("maps: %d images per client of %d pixels for %d member(s) take about %s, more than half the %s available on %s; lower -side, -images or -clients",
			o.Images, o.Side, len(members), human(need), human(float64(have)), where)
	}
	info := &report.MapsInfo{Fusion: o.Fusion, Discard: *o.Discard}
	var sheets mapSheets
	for _, m := range members {
		entry, err := sheets.add(m, o, info)
		if err != nil {
			return nil, err
		}
		info.Members = append(info.Members, entry)
	}
	if len(sheets.members) == 0 {
		var why []string
		for _, e := range info.Members {
			why = append(why, e.Name+": "+e.Skipped)
		}
		return nil, fmt.Errorf("maps: no member of %s has maps (%s)", dir, strings.Join(why, "; "))
	}
	if len(cfg.Suite) == 0 {
		sheets.members[0].Name = "" // a run of its own: its name (a grid's seed-1) names no member
	}
	return info, report.DrawMaps(dir, info, sheets.images, sheets.classNames, sheets.members, o.Side, o.Alpha)
}

// mapSheets is what the sheets show: the clients' test images (the first member with a
// checkpoint chooses them; a suite's members share the data and partition) and each
// member's maps of them.
type mapSheets struct {
	images     [][]report.MapImage
	classNames []string
	members    []report.MemberHeats
}

// add computes member m's maps (its run directory is m.Out/m.Name) and returns its entry
// in maps.json: its kind, or why it has none.
func (ms *mapSheets) add(m config.Config, o MapOptions, info *report.MapsInfo) (report.MemberMaps, error) {
	mdir := filepath.Join(m.Out, m.Name)
	entry := report.MemberMaps{Name: m.Name}
	if !rundir.HasCheckpoint(mdir) {
		entry.Skipped = "no checkpoint"
		return entry, nil
	}
	heats, err := ms.memberMaps(m, mdir, o, info)
	if err != nil {
		return entry, fmt.Errorf("maps of %s: %w", mdir, err)
	}
	entry.Kind, entry.Skipped = heats.Kind, heats.skipped
	if heats.skipped == "" {
		ms.members = append(ms.members, heats.MemberHeats)
	}
	return entry, nil
}

// memberHeats is a member's maps, or why it has none.
type memberHeats struct {
	report.MemberHeats
	skipped string
}

// memberMaps computes one member's maps from its checkpoint. The first member fixes
// info's clients and images (and ms's images); every member sees the same ones.
func (ms *mapSheets) memberMaps(cfg config.Config, dir string, o MapOptions, info *report.MapsInfo) (*memberHeats, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	se, err := prepare(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	defer se.close()
	if _, err := rundir.Restore(dir, cfg, se.run); err != nil {
		return nil, err
	}
	fed := se.run.Federated()
	if fed == nil || fed.Test == nil {
		return &memberHeats{skipped: "not an image dataset"}, nil
	}
	if info.Clients == nil {
		if err := ms.chooseImages(fed, o, info); err != nil {
			return nil, err
		}
	}
	res := &memberHeats{MemberHeats: report.MemberHeats{Name: cfg.Name, Algorithm: cfg.Algorithm.Name, Heats: make([][]report.Heat, len(info.Clients))}}
	err = se.run.Inspect(info.Clients, info.Images, func(s *cuda.Scope, m model.Model, x *cuda.Tensor, clients []int, valid int) error {
		return res.inspect(s, m, x, clients, valid, o, info)
	})
	if err != nil && strings.Contains(err.Error(), "cannot be inspected") {
		return &memberHeats{skipped: err.Error()}, nil
	}
	return res, err
}

// chooseImages picks the clients (o's, else the first four) and n of each one's test
// images spread over its classes (classSpread), into info and ms.
func (ms *mapSheets) chooseImages(fed *data.Federated, o MapOptions, info *report.MapsInfo) error {
	clients := o.Clients
	if clients == nil {
		for c := 0; c < min(4, len(fed.Part.Test)); c++ {
			clients = append(clients, c)
		}
	}
	n := o.Images
	for _, c := range clients {
		if c < 0 || c >= len(fed.Part.Test) {
			return fmt.Errorf("client %d: the run has clients 0 to %d", c, len(fed.Part.Test)-1)
		}
		n = min(n, len(fed.Part.Test[c]))
	}
	if n == 0 {
		return fmt.Errorf("a chosen client has no test images")
	}
	info.Clients = clients
	ms.classNames = fed.Test.ClassNames
	for _, c := range clients {
		idx := classSpread(fed.Part.Test[c], fed.Test.Labels, n)
		info.Images = append(info.Images, idx)
		var row []report.MapImage
		for _, i := range idx {
			row = append(row, report.MapImage{Image: testImage(fed.Test.Pixels, fed.Test.C, fed.Test.H, fed.Test.W, i), Index: i, Label: int(fed.Test.Labels[i])})
		}
		ms.images = append(ms.images, row)
	}
	return nil
}

// inspect is memberMaps' look at one stacked chunk of clients (Run.Inspect): the model's
// predictions and maps of each valid row's images.
func (res *memberHeats) inspect(s *cuda.Scope, m model.Model, x *cuda.Tensor, clients []int, valid int, o MapOptions, info *report.MapsInfo) error {
	pos := tokenCount(m)
	var cp model.Capture
	logits := m.Forward(s, x, &model.Pass{Capture: &cp})
	if err := s.Err(); err != nil {
		return err
	}
	pred := predictions(logits)
	var heats [][][]float64 // [row][image] heat map
	var gh, gw int
	var err error
	switch {
	case len(cp.Attention) > 0:
		res.Kind = "rollout"
		if pos <= 0 {
			return fmt.Errorf("a ViT without a position embedding")
		}
		gh = int(math.Round(math.Sqrt(float64(pos - 1))))
		gw = gh
		if gh*gw != pos-1 {
			return fmt.Errorf("%d patches do not form a square grid", pos-1)
		}
		heats, err = rolloutMaps(s, cp.Attention, valid, pos, o)
	case len(cp.Modulator) > 0:
		res.Kind = "focal"
		last := cp.Modulator[len(cp.Modulator)-1]
		gh, gw = int(last.Size(3)), int(last.Size(4))
		heats, err = modulatorMaps(s, last, valid)
	default:
		res.skipped = "the model has neither attention nor focal modulation"
		return nil
	}
	if err != nil {
		return err
	}
	for i := 0; i < valid; i++ {
		ci := slices.Index(info.Clients, clients[i])
		for j := range info.Images[ci] {
			h := report.Heat{Values: heats[i][j], GH: gh, GW: gw, Pred: -1}
			if at := i*len(info.Images[ci]) + j; at < len(pred) {
				h.Pred = pred[at]
			}
			res.Heats[ci] = append(res.Heats[ci], h)
		}
	}
	return nil
}

// predictions is the predicted class of every image of logits [K, B, classes], row by row:
// a map is read against what the model made of the image; nil when the logits cannot be
// read (no captions then).
func predictions(logits *cuda.Tensor) []int {
	if logits == nil || len(logits.Shape()) != 3 {
		return nil
	}
	v, err := logits.Float32s()
	if err != nil {
		return nil
	}
	var pred []int
	k := int(logits.Size(2))
	for r := 0; r+k <= len(v); r += k {
		best := 0
		for c := 1; c < k; c++ {
			if v[r+c] > v[r+best] {
				best = c
			}
		}
		pred = append(pred, best)
	}
	return pred
}

// classSpread is n of a client's test images (indices into the test set, labels their
// classes) covering as many classes as it can: the first image of each class in turn, then
// the rest in order, so a sheet shows the model on several classes rather than n images of
// the one class a skewed client mostly holds.
func classSpread(test []int, labels []int64, n int) []int {
	var out, rest []int
	seen := map[int64]bool{}
	for _, i := range test {
		if !seen[labels[i]] && len(out) < n {
			seen[labels[i]] = true
			out = append(out, i)
		} else {
			rest = append(rest, i)
		}
	}
	return append(out, rest[:min(n-len(out), len(rest))]...)
}

// tokenCount is the length of a ViT's position embedding (the class token and the
// patches), found by name among m's parameters; 0 when m has none.
func tokenCount(m model.Model) int {
	for _, p := range m.Params().List {
		if strings.HasSuffix(p.Name, "pos_embed") && len(p.Shape) == 3 {
			return int(p.Shape[1])
		}
	}
	return 0
}

// testImage is image i of a C×H×W uint8 set.
func testImage(pix []uint8, c, h, w, i int) analysis.Image {
	n := c * h * w
	return analysis.Image{C: c, H: h, W: w, Pix: pix[i*n : (i+1)*n]}
}

// rolloutMaps is, per row (the first valid) and image, the class token's rollout over the
// patches normalized by its maximum, from the blocks' probabilities [K, B, heads, T, S]:
// the class token and the pos − 1 patches are kept (prompt tokens and prefix keys
// dropped, see analysis.Restrict).
func rolloutMaps(s *cuda.Scope, blocks []*cuda.Tensor, valid, pos int, o MapOptions) ([][][]float64, error) {
	b0 := blocks[0]
	nb := int(b0.Size(1))
	per := make([][][]analysis.Attention, valid) // [row][image][block]
	for i := range per {
		per[i] = make([][]analysis.Attention, nb)
	}
	for _, bt := range blocks {
		v, err := s.To(bt, cuda.Float64).Float64s()
		if err != nil {
			return nil, err
		}
		heads, t, sk := int(bt.Size(2)), int(bt.Size(3)), int(bt.Size(4))
		prompts, prefix := t-pos, sk-t
		keep := func(off int) []int {
			out := []int{off}
			for j := 1; j < pos; j++ {
				out = append(out, off+prompts+j)
			}
			return out
		}
		n := heads * t * sk
		for i := 0; i < valid; i++ {
			for j := 0; j < nb; j++ {
				a, err := analysis.Restrict(v[(i*nb+j)*n:(i*nb+j+1)*n], heads, t, sk, keep(0), keep(prefix))
				if err != nil {
					return nil, err
				}
				per[i][j] = append(per[i][j], a)
			}
		}
	}
	out := make([][][]float64, valid)
	for i := range per {
		for j := range per[i] {
			row, err := analysis.Rollout(per[i][j], analysis.RolloutOptions{Fusion: o.Fusion, Discard: *o.Discard})
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], analysis.Normalize(row[1:], false))
		}
	}
	return out, nil
}

// modulatorMaps is, per row and image, the L2 norm over channels of the modulator
// [K, B, C, H, W] at each position, min-max normalized.
func modulatorMaps(s *cuda.Scope, mod *cuda.Tensor, valid int) ([][][]float64, error) {
	v, err := s.To(mod, cuda.Float64).Float64s()
	if err != nil {
		return nil, err
	}
	nb, c, hw := int(mod.Size(1)), int(mod.Size(2)), int(mod.Size(3)*mod.Size(4))
	out := make([][][]float64, valid)
	for i := range out {
		for j := 0; j < nb; j++ {
			at := (i*nb + j) * c * hw
			out[i] = append(out[i], analysis.Normalize(analysis.Magnitude(v[at:at+c*hw], c, hw), true))
		}
	}
	return out, nil
}
