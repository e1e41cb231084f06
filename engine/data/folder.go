package data

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // register the JPEG decoder
	_ "image/png"  // register the PNG decoder
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxImagePixels bounds the declared width×height of an image before it is decoded.
const maxImagePixels = 1 << 26

// LoadImageFolder loads an image-classification folder: root holds one sub-folder per
// class (class names are the sorted folder names) of PNG or JPEG images (.png, .jpg,
// .jpeg, any case; other files and hidden files are skipped). Each image is converted
// to RGB (greyscale replicated, alpha dropped) and resized to size×size with bilinear
// interpolation (half-pixel centres, as PIL and OpenCV).
func LoadImageFolder(name, root string, size int) (*Images, error) {
	if size <= 0 {
		return nil, fmt.Errorf("data: %s: image size %d, want > 0", root, size)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	x := &Images{Name: name, C: 3, H: size, W: size}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			x.ClassNames = append(x.ClassNames, e.Name())
		}
	}
	if x.Classes = len(x.ClassNames); x.Classes == 0 {
		return nil, fmt.Errorf("data: %s: no class sub-folders", root)
	}
	for ci, cls := range x.ClassNames {
		files, err := os.ReadDir(filepath.Join(root, cls))
		if err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		for _, f := range files {
			switch strings.ToLower(filepath.Ext(f.Name())) {
			case ".png", ".jpg", ".jpeg":
			default:
				continue
			}
			if f.IsDir() || strings.HasPrefix(f.Name(), ".") {
				continue
			}
			p := filepath.Join(root, cls, f.Name())
			pix, err := loadImageRGB(p, size)
			if err != nil {
				return nil, err
			}
			x.Pixels = append(x.Pixels, pix...)
			x.Labels = append(x.Labels, int64(ci))
			x.N++
		}
	}
	if err := x.Validate(); err != nil {
		return nil, err
	}
	return x, nil
}

// loadImageRGB decodes an image file and returns it as 3×size×size CHW pixels.
func loadImageRGB(path string, size int) ([]uint8, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("data: %s: cannot decode image: %w", path, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxImagePixels/cfg.Height {
		return nil, fmt.Errorf("data: %s: image declares %d×%d pixels (empty or over %d)", path, cfg.Width, cfg.Height, maxImagePixels)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("data: %s: cannot decode image: %w", path, err)
	}
	pix, h, w := imageToCHW(img)
	return resizeBilinear(pix, 3, h, w, size, size), nil
}

// imageToCHW converts img to 3×H×W RGB pixels (greyscale replicated, alpha dropped).
func imageToCHW(img image.Image) (pix []uint8, h, w int) {
	r := img.Bounds()
	h, w = r.Dy(), r.Dx()
	pix = make([]uint8, 3*h*w)
	R, G, B := pix[:h*w], pix[h*w:2*h*w], pix[2*h*w:]
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i, px, py := y*w+x, r.Min.X+x, r.Min.Y+y
			switch m := img.(type) {
			case *image.Gray:
				v := m.Pix[m.PixOffset(px, py)]
				R[i], G[i], B[i] = v, v, v
			case *image.YCbCr:
				c := m.YCbCrAt(px, py)
				R[i], G[i], B[i] = color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
			case *image.RGBA:
				o := m.PixOffset(px, py)
				R[i], G[i], B[i] = m.Pix[o], m.Pix[o+1], m.Pix[o+2]
			default:
				c := color.NRGBAModel.Convert(img.At(px, py)).(color.NRGBA)
				R[i], G[i], B[i] = c.R, c.G, c.B
			}
		}
	}
	return pix, h, w
}

// resizeBilinear resizes c planes of h×w pixels to oh×ow with bilinear interpolation
// and half-pixel centres: output pixel i samples the input at (i+0.5)·in/out − 0.5,
// clamped to the image.
func resizeBilinear(src []uint8, c, h, w, oh, ow int) []uint8 {
	y0, y1, fy := bilinearTaps(h, oh)
	x0, x1, fx := bilinearTaps(w, ow)
	dst := make([]uint8, c*oh*ow)
	for k := 0; k < c; k++ {
		in, out := src[k*h*w:(k+1)*h*w], dst[k*oh*ow:(k+1)*oh*ow]
		for i := 0; i < oh; i++ {
			top, bot := in[y0[i]*w:], in[y1[i]*w:]
			for j := 0; j < ow; j++ {
				t := (1-fx[j])*float64(top[x0[j]]) + fx[j]*float64(top[x1[j]])
				b := (1-fx[j])*float64(bot[x0[j]]) + fx[j]*float64(bot[x1[j]])
				out[i*ow+j] = uint8(min(255, (1-fy[i])*t+fy[i]*b+0.5))
			}
		}
	}
	return dst
}

// bilinearTaps returns, for each of out positions, the two input indices to blend and
// the weight of the second.
func bilinearTaps(in, out int) (lo, hi []int, frac []float64) {
	lo, hi, frac = make([]int, out), make([]int, out), make([]float64, out)
	for i := range out {
		s := max(0, (float64(i)+0.5)*float64(in)/float64(out)-0.5)
		l := min(int(s), in-1)
		lo[i], hi[i] = l, min(l+1, in-1)
		if l < in-1 {
			frac[i] = s - float64(l)
		}
	}
	return lo, hi, frac
}

// LoadDomainFolders loads several domains of one dataset (Office-Home's Art, Clipart,
// Product and Real World): each domain is root/domain with LoadImageFolder's class
// layout, and all domains must have the same class names. Images are concatenated in
// domain order; Domains and DomainNames record each image's domain.
func LoadDomainFolders(name, root string, domains []string, size int) (*Images, error) {
	if len(domains) == 0 {
		return nil, fmt.Errorf("data: %s: no domains given", root)
	}
	var all *Images
	for di, d := range domains {
		x, err := LoadImageFolder(name+"/"+d, filepath.Join(root, d), size)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = &Images{Name: name, C: 3, H: size, W: size, Classes: x.Classes, ClassNames: x.ClassNames,
				DomainNames: slices.Clone(domains)}
		} else if !slices.Equal(x.ClassNames, all.ClassNames) {
			return nil, fmt.Errorf("data: %s: domain %q has classes %v, domain %q has %v", root, d, x.ClassNames, domains[0], all.ClassNames)
		}
		all.N += x.N
		all.Pixels = append(all.Pixels, x.Pixels...)
		all.Labels = append(all.Labels, x.Labels...)
		for range x.N {
			all.Domains = append(all.Domains, int64(di))
		}
	}
	if err := all.Validate(); err != nil {
		return nil, err
	}
	return all, nil
}
