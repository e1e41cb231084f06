package data

import (
	"fmt"

	"pfl/cuda"
)

// UploadConfig says how UploadWith stores an image set and shapes its batches. Apart from
// Mean and Std its zero value serves batches at the stored geometry, as Upload does.
//
// Batches are made in this order (DeviceImages.Batch): gather the uint8 images, scale to
// [0, 1], pad-crop-flip at the stored size, resize to Size×Size, repeat the grey channel,
// normalize, add noise. torchvision's order in a ViT-on-CIFAR recipe is RandomCrop(32,
// padding=4), RandomHorizontalFlip, Resize(224), ToTensor, Normalize; FedPerfix itself
// uses Resize(224), ToTensor, Normalize(0.5, 0.5) and no augmentation. Cropping at the
// stored size keeps Augment.Pad in stored pixels (the CIFAR recipe's strength); the flip
// commutes exactly with the resize below (its sample grid is mirror-symmetric); and since
// every output pixel is a convex combination of inputs, resizing before or after the
// per-channel normalization gives the same values up to rounding.
type UploadConfig struct {
	// Mean and Std normalize each channel on the [0, 1] scale: one value per stored channel
	// (ChannelStats) or, with Channels 3, one per output channel. FedPerfix uses the fixed
	// constants mean = std = 0.5 for every dataset instead of dataset statistics.
	Mean, Std []float64

	// Size > 0 resizes every batch to Size×Size on the device after crop and flip (the
	// stored set stays at its native size: CIFAR-100 at 224² would take 7.5 GB as uint8).
	// The interpolation is bilinear with align_corners=False, PyTorch's F.interpolate and
	// torchvision's Resize on tensors without antialias. For upscaling (FedPerfix's 28 or
	// 32 → 224) this is PIL's bilinear, which torchvision's Resize on PIL images (the
	// reference's path) calls, except that PIL rounds to uint8 after each of its two
	// passes: at most 1/255 apart (measured against PIL 9.4, 28 and 32 → 224). Downscaling
	// here has no antialias filter and differs from PIL, which widens the filter by the
	// scale (up to 96/255 on random pixels 32 → 20, 2/255 on a smooth image): shrink
	// photos on the host with LoadImageFolder instead. 0, or Size equal to the stored H
	// and W, serves batches at the stored size.
	Size int

	// Channels 3 repeats the single channel of a greyscale set (OrganAMNIST in FedPerfix:
	// Normalize(0.5) then the channel repeated 3×). 0 keeps the stored channels.
	Channels int
}

// Shape is the batch geometry UploadWith(x, _, c) serves: what the model takes as input.
func (c UploadConfig) Shape(x *Images) (ch, h, w int) {
	ch, h, w = x.C, x.H, x.W
	if c.Channels > 0 {
		ch = c.Channels
	}
	if c.Size > 0 {
		h, w = c.Size, c.Size
	}
	return ch, h, w
}

// validate checks c against the set x it uploads.
func (c UploadConfig) validate(x *Images) error {
	ch, _, _ := c.Shape(x)
	switch {
	case c.Size < 0:
		return fmt.Errorf("data: upload %s: size %d, want ≥ 0 (0: stored size)", x.Name, c.Size)
	case c.Channels < 0 || (ch != x.C && !(x.C == 1 && ch == 3)):
		return fmt.Errorf("data: upload %s: %d channels from %d stored; only 1 → 3 is supported", x.Name, ch, x.C)
	case len(c.Mean) != len(c.Std) || (len(c.Mean) != x.C && len(c.Mean) != ch):
		return fmt.Errorf("data: upload %s: %d means and %d stds for %d channels", x.Name, len(c.Mean), len(c.Std), x.C)
	}
	for i, s := range c.Std {
		if !(s > 0) {
			return fmt.Errorf("data: upload %s: std of channel %d is %g", x.Name, i, s)
		}
	}
	return nil
}

// UploadWith copies x to dev at its stored size and prepares what its batches need as c
// says: the normalization constants and, with c.Size, the two interpolation matrices,
// all uploaded once. The returned DeviceImages reports the batch geometry in C, H, W.
func UploadWith(x *Images, dev cuda.Device, c UploadConfig) (*DeviceImages, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	if err := c.validate(x); err != nil {
		return nil, err
	}
	ch, h, w := c.Shape(x)
	s := cuda.NewScope()
	defer s.Close()
	nc := int64(len(c.Mean))
	d := &DeviceImages{N: x.N, C: ch, H: h, W: w, Mean: c.Mean, Std: c.Std}
	d.X = cuda.FromSlice(s, dev, x.Pixels, int64(x.N), int64(x.C), int64(x.H), int64(x.W))
	d.Y = cuda.FromSlice(s, dev, x.Labels, int64(x.N))
	d.mean = cuda.FromSlice(s, dev, toF32(c.Mean), 1, nc, 1, 1)
	d.std = cuda.FromSlice(s, dev, toF32(c.Std), 1, nc, 1, 1)
	if h != x.H || w != x.W {
		d.rh = cuda.FromSlice(s, dev, bilinearMatrix(x.H, h), int64(h), int64(x.H))
		d.rwT = s.Contiguous(s.Transpose(cuda.FromSlice(s, dev, bilinearMatrix(x.W, w), int64(w), int64(x.W)), 0, 1))
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("data: upload %s: %w", x.Name, err)
	}
	s.Keep(d.X, d.Y, d.mean, d.std)
	if d.rh != nil {
		s.Keep(d.rh, d.rwT)
	}
	return d, nil
}

// bilinearMatrix is the [out, in] row-major matrix of 1-D bilinear interpolation with
// align_corners=False: row i weighs the two inputs around (i+0.5)·in/out − 0.5, clamped
// at 0, with the upper neighbour clamped to the edge. Each row sums to 1.
func bilinearMatrix(in, out int) []float32 {
	lo, hi, frac := bilinearTaps(in, out)
	m := make([]float64, out*in)
	for i := range out {
		m[i*in+lo[i]] += 1 - frac[i]
		m[i*in+hi[i]] += frac[i]
	}
	return toF32(m)
}

// resize applies the stored interpolation matrices to x [N, C, H0, W0]: R_h · x · R_wᵀ,
// two matrix products broadcast over N and C, giving [N, C, H, W].
func (d *DeviceImages) resize(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor {
	if d.rh == nil {
		return x
	}
	return s.MatMul(d.rh, s.MatMul(x, d.rwT))
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
