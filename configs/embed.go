// Package configs embeds the experiment presets, so `pfl train` runs the quick start with
// no file at hand and `pfl train -c configs/<name>.yaml` reads the same files.
package configs

import "embed"

// Files holds every preset YAML of this folder.
//
//go:embed *.yaml
var Files embed.FS

// QuickStart is the name of the default experiment.
const QuickStart = "quickstart-fmnist.yaml"
