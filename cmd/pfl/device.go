package main

import (
	"fmt"

	"pfl/cuda"
)

// checkDevice refuses a CUDA device that this build of the native library, or this
// machine, cannot give, before a run loads its data or touches its directory (the native
// library would otherwise fail only when the data is uploaded, in its own words).
func checkDevice(dev cuda.Device) error {
	if !dev.IsCUDA() {
		return nil // the CPU is always there
	}
	device := dev.String()
	info, err := cuda.Capabilities()
	if err != nil {
		return err
	}
	if !info.HasCUDA {
		return fmt.Errorf("device %s: this pfl's native library (%s) is a CPU build; to train on a GPU, build the CUDA one on a machine with an NVIDIA GPU (%s), or train on the CPU with --set device=cpu",
			device, info.LibraryPath, cuda.BuildCommand)
	}
	n, err := cuda.CUDADeviceCount()
	if err != nil {
		return err
	}
	switch {
	case n == 0:
		return fmt.Errorf("device %s: this is a CUDA build, but the machine shows no CUDA device (check nvidia-smi and CUDA_VISIBLE_DEVICES), or train on the CPU with --set device=cpu", device)
	case dev.Index >= n:
		return fmt.Errorf("device %s: this machine shows %d CUDA device(s), cuda:0 to cuda:%d (pfl doctor lists them)", device, n, n-1)
	}
	return nil
}
