package report

import (
	"pfl/engine/config"
	"pfl/engine/config/configtest"
)

// filled is configtest.Filled: c with the keys it leaves zero at their defaults.
func filled(c config.Config) config.Config { return configtest.Filled(c) }
