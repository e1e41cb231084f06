// Package configtest helps tests write configs: a literal that names only the keys a test
// cares about, the rest at their defaults.
package configtest

import (
	"reflect"

	"pfl/cuda"
	"pfl/engine/config"
)

// Filled returns c with every field it leaves at its zero value taken from
// config.Default, so a test can write only the keys it cares about as a literal. (A run
// never does this: a zero it is given is a value.)
func Filled(c config.Config) config.Config {
	fill(reflect.ValueOf(&c).Elem(), reflect.ValueOf(config.Default()))
	return c
}

// fill sets dst's zero fields to def's, section by section.
func fill(dst, def reflect.Value) {
	for i := 0; i < dst.NumField(); i++ {
		f, g := dst.Field(i), def.Field(i)
		if !f.CanSet() {
			continue // the algorithm's own sections: a section not set is at its default
		}
		if f.Kind() == reflect.Struct && f.Type() != reflect.TypeFor[cuda.Device]() {
			fill(f, g)
			continue
		}
		if f.IsZero() {
			f.Set(g)
		}
	}
}
