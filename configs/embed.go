// Package configs embeds the experiment presets, so `pfl train` runs the demo with
// no file at hand and `pfl train -c configs/<name>.yaml` reads the same files.
package configs

import "embed"

// Files holds every preset YAML of this folder.
//
//go:embed *.yaml
var Files embed.FS

// Demo is the name of the default experiment: FedTP, FedPerfix and TransFed with FedAvg and
// Local on Fashion-MNIST, a few minutes on two CPU cores.
const Demo = "demo-fmnist.yaml"
