package report

import (
	"fmt"
	"image"
	"os"
	"path/filepath"

	"pfl/engine/analysis"
	"pfl/engine/internal/chart"
	"pfl/engine/rundir"
)

// MapsInfo describes the maps a run or suite holds (maps/maps.json).
type MapsInfo struct {
	Fusion  analysis.Fusion `json:"fusion"`
	Discard float64         `json:"discard"`
	Clients []int           `json:"clients"`
	Images  [][]int         `json:"images"` // per client, the test images' indices
	// Members lists each member's maps: "rollout" (attention rollout of a ViT), "focal"
	// (the modulator magnitude of a FocalNet's last block), or why it has none.
	Members []MemberMaps `json:"members"`
	Sheets  []string     `json:"sheets"` // per client, the sheet's path relative to the maps folder
}

// MemberMaps is one member's entry in MapsInfo.
type MemberMaps struct {
	Name    string `json:"name"`
	Kind    string `json:"kind,omitempty"`    // rollout or focal
	Skipped string `json:"skipped,omitempty"` // why the member has no maps
}

// MapImage is one test image on a maps sheet: its pixels, its index in the test set and
// its class.
type MapImage struct {
	Image analysis.Image
	Index int
	Label int
}

// Heat is one member's map of one image: a value per position of a GH × GW grid (the
// patches, or the focal modulator's positions), scaled to [0, 1], and the class the model
// predicted for the image (−1: unknown).
type Heat struct {
	Values []float64
	GH, GW int
	Pred   int
}

// MemberHeats is one member's maps: per client, a Heat per image of the sheet. Name is the
// suite member's name ("" for a run of its own), Algorithm its algorithm.name, Kind
// rollout or focal.
type MemberHeats struct {
	Name, Algorithm, Kind string
	Heats                 [][]Heat
}

// rowName is a member's row label on a sheet: its algorithm, after the member's name where
// that differs, and the kind of its maps.
func (m MemberHeats) rowName() string {
	name := m.Algorithm
	switch {
	case name == "":
		name = m.Name
	case m.Name != "" && m.Name != name:
		name = m.Name + " (" + name + ")"
	}
	return name + ": " + m.Kind
}

// DrawMaps writes the maps sheets of info's clients into dir/maps: client<c>.png per
// client (a row of its test images, labelled with their index and class, then a row per
// member of its maps overlaid on the images, each captioned with the model's prediction,
// right or wrong), then dir/maps/maps.json (info, with the sheets). images are per client
// the sheet's images, members the members that have maps; side is the pixels an image is
// magnified to at least, alpha the maps' opacity over the images.
func DrawMaps(dir string, info *MapsInfo, images [][]MapImage, classNames []string, members []MemberHeats, side int, alpha float64) error {
	out := filepath.Join(dir, "maps")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var names []string
	for _, m := range members {
		names = append(names, m.rowName())
	}
	for ci, c := range info.Clients {
		var inputs []image.Image
		var labels []string
		for _, im := range images[ci] {
			inputs = append(inputs, analysis.Picture(im.Image, analysis.Scale(im.Image, side)))
			labels = append(labels, fmt.Sprintf("#%d %s", im.Index, className(im.Label, classNames)))
		}
		rows := [][]image.Image{inputs}
		for _, m := range members {
			row, err := overlays(images[ci], m.Heats[ci], classNames, side, alpha)
			if err != nil {
				return fmt.Errorf("maps of %s: %w", m.Name, err)
			}
			rows = append(rows, row)
		}
		sheet := analysis.WithColorBar(analysis.Sheet(rows, append([]string{fmt.Sprintf("client %d", c)}, names...), labels),
			"map value (rollout: divided by its maximum; focal modulation: min-max scaled). Under each map: the model's prediction, right or wrong.")
		name := fmt.Sprintf("client%d.png", c)
		if err := analysis.WritePNG(filepath.Join(out, name), sheet); err != nil {
			return err
		}
		info.Sheets = append(info.Sheets, name)
	}
	return rundir.WriteJSON(filepath.Join(out, "maps.json"), info)
}

// overlays is a member's row of a sheet: each image with its map over it, captioned with
// the prediction where the model's logits gave one.
func overlays(images []MapImage, heats []Heat, classNames []string, side int, alpha float64) ([]image.Image, error) {
	var row []image.Image
	for j, im := range images {
		h := heats[j]
		ov, err := analysis.Overlay(im.Image, h.Values, h.GH, h.GW, analysis.Scale(im.Image, side), alpha)
		if err != nil {
			return nil, err
		}
		var cell image.Image = ov
		if h.Pred >= 0 {
			cell = predictionCaption(ov, h.Pred, im.Label, classNames)
		}
		row = append(row, cell)
	}
	return row, nil
}

// className is class c's name, or its number when the dataset names none.
func className(c int, names []string) string {
	if c < len(names) {
		return names[c]
	}
	return fmt.Sprint(c)
}

// predictionCaption is a map with the model's predicted class under it and the word right
// or wrong (on blue when it is the image's class, on vermillion when not: the two
// colours that stay apart under colour-vision deficiencies, and the word says it without
// them).
func predictionCaption(img image.Image, pred, label int, names []string) image.Image {
	name := className(pred, names)
	if pred == label {
		return analysis.Caption(img, chart.OkabeIto[0], name+": right")
	}
	return analysis.Caption(img, chart.OkabeIto[1], name+": wrong")
}
