package report

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"pfl/engine/analysis"
)

// TestDrawMapsSheet draws the maps sheet of one client with two members over four images
// whose class names are long for their width, and checks that the sheet is written and
// listed, that each member's row is named by its algorithm (a run of its own by its
// algorithm alone), and that the sheet holds every row. With PFL_FIGURES set to a folder
// the sheet is kept there (maps-client3.png) to be looked at.
func TestDrawMapsSheet(t *testing.T) {
	dir := t.TempDir()
	names := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	var images []MapImage
	for i, label := range []int{0, 2, 3, 9} {
		pix := make([]uint8, 28*28)
		for y := 0; y < 28; y++ {
			for x := 0; x < 28; x++ {
				pix[y*28+x] = uint8(128 + 120*math.Sin(float64(x*(i+1)+y)/5))
			}
		}
		images = append(images, MapImage{Image: analysis.Image{C: 1, H: 28, W: 28, Pix: pix}, Index: 900 + 37*i, Label: label})
	}
	heats := func(pred []int) [][]Heat {
		var row []Heat
		for _, p := range pred {
			v := make([]float64, 16)
			for j := range v {
				v[j] = float64(j) / 15
			}
			row = append(row, Heat{Values: v, GH: 4, GW: 4, Pred: p})
		}
		return [][]Heat{row}
	}
	members := []MemberHeats{
		{Name: "fedtp", Algorithm: "fedtp", Kind: "rollout", Heats: heats([]int{0, 6, 3, 9})},
		{Name: "partial-head", Algorithm: "partial", Kind: "rollout", Heats: heats([]int{6, 2, 0, 7})},
	}
	if got := members[1].rowName(); got != "partial-head (partial): rollout" {
		t.Errorf("row name %q", got)
	}
	if got := (MemberHeats{Algorithm: "fedtp", Kind: "rollout"}).rowName(); got != "fedtp: rollout" {
		t.Errorf("a run of its own: row name %q, want its algorithm", got)
	}
	info := &MapsInfo{Clients: []int{3}, Images: [][]int{{900, 937, 974, 1011}}}
	if err := DrawMaps(dir, info, [][]MapImage{images}, names, members, 96, 0.5); err != nil {
		t.Fatal(err)
	}
	if len(info.Sheets) != 1 || info.Sheets[0] != "client3.png" {
		t.Fatalf("sheets %v", info.Sheets)
	}
	f, err := os.Open(filepath.Join(dir, "maps", "client3.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// three rows of 96-pixel images (the inputs and two members, each map with a caption)
	if h := img.Bounds().Dy(); h < 3*96+2*16 {
		t.Errorf("sheet %d px high: fewer than three rows", h)
	}
	if keep := os.Getenv("PFL_FIGURES"); keep != "" {
		b, err := os.ReadFile(filepath.Join(dir, "maps", "client3.png"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(keep, "maps-client3.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
