package data

import "fmt"

// PadTo returns x with every image zero-padded to side×side, centred (an odd margin puts
// the extra row and column after the image): how Fashion-MNIST's 28×28 images are packed
// into CIFAR's 32×32 layout. Images already side×side are returned as they are.
func PadTo(x *Images, side int) (*Images, error) {
	if x.H == side && x.W == side {
		return x, nil
	}
	if x.H > side || x.W > side {
		return nil, fmt.Errorf("data: pad %s (%s): its %d×%d images are larger than %d×%d", x.Name, x.Source, x.H, x.W, side, side)
	}
	top, left := (side-x.H)/2, (side-x.W)/2
	y := *x
	y.H, y.W = side, side
	y.Pixels = make([]uint8, x.N*x.C*side*side)
	for i := 0; i < x.N*x.C; i++ {
		src := x.Pixels[i*x.H*x.W : (i+1)*x.H*x.W]
		dst := y.Pixels[i*side*side : (i+1)*side*side]
		for r := 0; r < x.H; r++ {
			copy(dst[(top+r)*side+left:(top+r)*side+left+x.W], src[r*x.W:(r+1)*x.W])
		}
	}
	return &y, y.Validate()
}
