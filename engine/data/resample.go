package data

import "math"

// pilPrecision is PIL's PRECISION_BITS for 8-bit resampling (32 − 8 − 2): filter weights
// are fixed-point integers with this many fraction bits.
const pilPrecision = 22

// pilTaps is one output pixel's filter: weights k for the inputs lo, lo+1, ...
type pilTaps struct {
	lo int
	k  []int64
}

// resizePIL resizes c planes of h×w pixels to oh×ow as PIL's Image.resize with BILINEAR
// does (Resample.c), which torchvision's Resize calls on PIL images and so FedPerfix's
// preprocessing uses. The triangle filter is widened by the scale when downscaling, so
// every input pixel contributes (antialias: a photo shrunk 4× is not sampled at every
// 4th pixel); on upscaling it is plain bilinear with half-pixel centres. Like PIL it runs
// the horizontal pass first, with 22-bit fixed-point weights, rounding and clamping to
// uint8 after each pass, and skips a pass whose size does not change: on PNG input it
// matches PIL 9.4 exactly.
func resizePIL(src []uint8, c, h, w, oh, ow int) []uint8 {
	if ow != w {
		src, w = resamplePass(src, c*h, w, 1, pilCoeffs(w, ow)), ow
	}
	if oh != h {
		// a vertical pass is a horizontal one over columns: stride w between taps
		out := make([]uint8, c*oh*w)
		ty := pilCoeffs(h, oh)
		for k := 0; k < c; k++ {
			plane := resamplePass(src[k*h*w:(k+1)*h*w], 1, h, w, ty)
			copy(out[k*oh*w:], plane)
		}
		src = out
	}
	return src
}

// resamplePass filters rows lines of n samples each, taps `stride` apart in memory (1
// along a row; w down a column, where each of the stride columns is a line): the output
// has len(taps) samples per line, laid out the same way.
func resamplePass(src []uint8, rows, n, stride int, taps []pilTaps) []uint8 {
	m := len(taps)
	out := make([]uint8, rows*m*stride)
	for r := 0; r < rows; r++ {
		in, dst := src[r*n*stride:(r+1)*n*stride], out[r*m*stride:(r+1)*m*stride]
		for col := 0; col < stride; col++ {
			for i, t := range taps {
				acc := int64(1) << (pilPrecision - 1) // rounds half up
				for j, k := range t.k {
					acc += int64(in[(t.lo+j)*stride+col]) * k
				}
				dst[i*stride+col] = uint8(min(max(acc>>pilPrecision, 0), 255))
			}
		}
	}
	return out
}

// pilCoeffs is PIL's precompute_coeffs for the bilinear filter (support 1) from in to
// out samples: output i is centred at (i+0.5)·in/out, and the triangle filter is
// stretched by max(in/out, 1); weights are normalized, then made fixed-point.
func pilCoeffs(in, out int) []pilTaps {
	scale := float64(in) / float64(out)
	fs := max(scale, 1)
	ss := 1 / fs
	taps := make([]pilTaps, out)
	for i := range taps {
		center := (float64(i) + 0.5) * scale
		lo := max(int(center-fs+0.5), 0)
		hi := min(int(center+fs+0.5), in)
		w := make([]float64, hi-lo)
		var sum float64
		for x := lo; x < hi; x++ {
			w[x-lo] = max(0, 1-math.Abs((float64(x)-center+0.5)*ss))
			sum += w[x-lo]
		}
		k := make([]int64, len(w))
		for j, v := range w {
			k[j] = int64(0.5 + v/sum*(1<<pilPrecision))
		}
		taps[i] = pilTaps{lo: lo, k: k}
	}
	return taps
}
