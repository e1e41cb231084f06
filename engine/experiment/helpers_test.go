package experiment

import (
	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/config/configtest"
)

// filled is configtest.Filled: c with the keys it leaves zero at their defaults.
func filled(c config.Config) config.Config { return configtest.Filled(c) }

func ptr[T any](v T) *T { return &v }

var cudaCPU = cuda.CPU
