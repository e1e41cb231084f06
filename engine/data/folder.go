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
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// maxImagePixels bounds the declared width×height of an image before it is decoded.
const maxImagePixels = 1 << 26

// maxPixelsPerByte bounds the declared width×height of an image by its file size, so
// that a few corrupt bytes cannot make the decoder allocate a huge image. No valid PNG
// or JPEG comes near it: deflate expands at most 1032:1 (8256 pixels a byte for a 1-bit
// PNG), and a JPEG spends at least a bit or two on each 8×8 block.
const maxPixelsPerByte = 1 << 14

// LoadImageFolder loads an image-classification folder: root holds one sub-folder per
// class (class names are the sorted folder names) of PNG or JPEG images (.png, .jpg,
// .jpeg, any case; other files and hidden files are skipped). Each image is converted
// to RGB (greyscale replicated, alpha dropped) and resized to size×size as PIL's bilinear
// resize does (resizePIL: antialiased when shrinking; torchvision's Resize on PIL images).
func LoadImageFolder(name, root string, size int) (*Images, error) {
	if size <= 0 {
		return nil, fmt.Errorf("data: %s: image size %d, want > 0", root, size)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	x := &Images{Name: name, Source: root, C: 3, H: size, W: size}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			x.ClassNames = append(x.ClassNames, e.Name())
		}
	}
	if x.Classes = len(x.ClassNames); x.Classes == 0 {
		return nil, fmt.Errorf("data: %s: no class sub-folders", root)
	}
	var paths []string
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
			paths = append(paths, filepath.Join(root, cls, f.Name()))
			x.Labels = append(x.Labels, int64(ci))
		}
	}
	if x.N = len(paths); x.N == 0 {
		return nil, fmt.Errorf("data: %s has no images (.png, .jpg or .jpeg in its class folders)", root)
	}
	if x.Pixels, err = loadImagesRGB(paths, size); err != nil {
		return nil, err
	}
	if err := x.Validate(); err != nil {
		return nil, err
	}
	return x, nil
}

// loadImagesRGB loads paths with loadImageRGB on all cores (loadImages).
func loadImagesRGB(paths []string, size int) ([]uint8, error) {
	return loadImages(paths, 3*size*size, func(path string) ([]uint8, error) { return loadImageRGB(path, size) })
}

// loadImages loads paths with load, which returns per pixel bytes for each, on all
// cores, since decoding and resizing dominate loading a photo folder (about 30 ms for a
// 1000×800 JPEG to 224², so 8 minutes for Office-Home on one core), and returns their
// pixels in path order. The error is the first failing file's in path order: after a
// failure no new file is started, and every file before it was started already.
func loadImages(paths []string, per int, load func(path string) ([]uint8, error)) ([]uint8, error) {
	out := make([]uint8, len(paths)*per)
	errs := make([]error, len(paths))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(paths)) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1) // a file taken is always finished
				if i >= len(paths) {
					return
				}
				pix, err := load(paths[i])
				if err != nil {
					errs[i] = err
					failed.Store(true)
					return
				}
				copy(out[i*per:], pix)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadImageRGB decodes an image file and returns it as 3×size×size CHW pixels.
func loadImageRGB(path string, size int) ([]uint8, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	return decodeImageRGB(path, b, size, maxImagePixels)
}

// decodeImageRGB decodes the image file path (its bytes b) and returns it as
// 3×size×size CHW pixels; an image declaring more than maxPixels pixels is an error
// before it is decoded.
func decodeImageRGB(path string, b []byte, size, maxPixels int) ([]uint8, error) {
	img, err := decodeImage(path, b, maxPixels)
	if err != nil {
		return nil, err
	}
	pix, h, w := imageToCHW(img)
	return resizePIL(pix, 3, h, w, size, size), nil
}

// decodeImageGrey decodes the image file path (its bytes b) as decodeImageRGB does and
// returns it as 1×size×size grey pixels (imageToGrey).
func decodeImageGrey(path string, b []byte, size, maxPixels int) ([]uint8, error) {
	img, err := decodeImage(path, b, maxPixels)
	if err != nil {
		return nil, err
	}
	pix, h, w := imageToGrey(img)
	return resizePIL(pix, 1, h, w, size, size), nil
}

// decodeImage decodes a PNG or JPEG file after checking the size it declares: more
// than maxPixels pixels, or more than maxPixelsPerByte a byte of the file, is an error
// before anything that large is allocated.
func decodeImage(path string, b []byte, maxPixels int) (image.Image, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("data: %s: cannot decode image: %w", path, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxPixels/cfg.Height {
		return nil, fmt.Errorf("data: %s: image declares %d×%d pixels (empty or over %d)", path, cfg.Width, cfg.Height, maxPixels)
	}
	if cfg.Width*cfg.Height > maxPixelsPerByte*len(b) {
		return nil, fmt.Errorf("data: %s: image declares %d×%d pixels in a file of %d bytes (truncated or corrupt)", path, cfg.Width, cfg.Height, len(b))
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("data: %s: cannot decode image: %w", path, err)
	}
	if r := img.Bounds(); r.Dx() != cfg.Width || r.Dy() != cfg.Height {
		return nil, fmt.Errorf("data: %s: image decodes to %d×%d pixels but declares %d×%d", path, r.Dx(), r.Dy(), cfg.Width, cfg.Height)
	}
	return img, nil
}

// imageToGrey converts img to H×W grey pixels as PIL's convert("L") does, which a
// torchvision Grayscale transform calls: grey images as they are (16-bit ones by their
// high byte, as Go's colour model does), colour ones by ITU-R 601-2 luma, PIL's
// fixed-point (19595·R + 38470·G + 7471·B + 2^15) >> 16, alpha dropped. A colour JPEG
// is converted to RGB first (Go's YCbCr conversion, which may differ from libjpeg's by
// a level): PIL decodes it to RGB too.
func imageToGrey(img image.Image) (pix []uint8, h, w int) {
	r := img.Bounds()
	h, w = r.Dy(), r.Dx()
	pix = make([]uint8, h*w)
	luma := func(R, G, B uint8) uint8 {
		return uint8((19595*uint32(R) + 38470*uint32(G) + 7471*uint32(B) + 1<<15) >> 16)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i, px, py := y*w+x, r.Min.X+x, r.Min.Y+y
			switch m := img.(type) {
			case *image.Gray:
				pix[i] = m.Pix[m.PixOffset(px, py)]
			case *image.Gray16:
				pix[i] = m.Pix[m.PixOffset(px, py)] // the high byte (big endian)
			case *image.YCbCr:
				c := m.YCbCrAt(px, py)
				pix[i] = luma(color.YCbCrToRGB(c.Y, c.Cb, c.Cr))
			default:
				c := color.NRGBAModel.Convert(img.At(px, py)).(color.NRGBA)
				pix[i] = luma(c.R, c.G, c.B)
			}
		}
	}
	return pix, h, w
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
			all = &Images{Name: name, Source: root, C: 3, H: size, W: size, Classes: x.Classes, ClassNames: x.ClassNames,
				DomainNames: slices.Clone(domains)}
		} else if !slices.Equal(x.ClassNames, all.ClassNames) {
			return nil, fmt.Errorf("data: %s: domain %s has %s, domain %s has %s", root, clip(d), classDiff(x.ClassNames, all.ClassNames), clip(domains[0]), classDiff(all.ClassNames, x.ClassNames))
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

// classDiff describes class list a against b for a message: its size and its first class
// not in b (class lists can be long).
func classDiff(a, b []string) string {
	for _, c := range a {
		if !slices.Contains(b, c) {
			return fmt.Sprintf("%d classes, among them %s", len(a), clip(c))
		}
	}
	return fmt.Sprintf("%d classes", len(a))
}
