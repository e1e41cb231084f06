package fl_test

import (
	"reflect"
	"strings"
	"testing"

	"pfl/engine/fl"
	"pfl/engine/fl/algo"
)

// settingKeys are Settings' keys under algorithm., from the mapstructure tags of its
// fields and of the registry's own sections: a section's name and each of its keys
// (hyper, hyper.lr, ..., pfedme, pfedme.lambda, ...).
func settingKeys() map[string]bool {
	keys := map[string]bool{}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			name := t.Field(i).Tag.Get("mapstructure")
			keys[prefix+name] = true
			if t.Field(i).Type.Kind() == reflect.Struct {
				walk(prefix+name+".", t.Field(i).Type)
			}
		}
	}
	walk("", reflect.TypeOf(fl.Settings{}))
	for _, k := range fl.OwnKeys() {
		def, _ := fl.OwnDefault(k)
		keys[k] = true
		walk(k+".", reflect.TypeOf(def))
	}
	return keys
}

// TestRegistryKeysAreSettings: every key a registry entry says it reads is a key of the
// algorithm section, and the defaults pass every algorithm's checks (partial's once it is
// told what to keep).
func TestRegistryKeysAreSettings(t *testing.T) {
	keys := settingKeys()
	for _, a := range fl.Algorithms() {
		for _, k := range a.ReadKeys() {
			if !keys[k] {
				t.Errorf("%s reads algorithm.%s, which is no key of the algorithm section", a.Name, k)
			}
		}
		s := fl.DefaultSettings()
		s.Name = a.Name
		if a.Keeps == fl.KeepListed {
			s.LocalRoles = []string{"head"}
		}
		if err := s.Resolve(0.01).Validate(2); err != nil {
			t.Errorf("%s: the defaults are refused: %v", a.Name, err)
		}
	}
}

// TestSettingsRefuseNamingTheKey: each section's check names the key it refuses, and a key
// only some algorithms read is refused for the others.
func TestSettingsRefuseNamingTheKey(t *testing.T) {
	for _, c := range []struct {
		set func(s *fl.Settings)
		key string
	}{
		{func(s *fl.Settings) { fl.EditOwn(s, func(c *algo.DittoConfig) { c.Lambda = -1 }) }, "algorithm.ditto.lambda"},
		{func(s *fl.Settings) { fl.EditOwn(s, func(c *algo.APFLConfig) { c.Alpha = 2 }) }, "algorithm.apfl.alpha"},
		{func(s *fl.Settings) { fl.EditOwn(s, func(c *fl.KNN) { c.K = 0 }) }, "algorithm.knn.k"},
		{func(s *fl.Settings) { fl.EditOwn(s, func(c *algo.PFedHNConfig) { c.Clip = -1 }) }, "algorithm.pfedhn.clip"},
		{func(s *fl.Settings) { fl.EditOwn(s, func(c *algo.PFedGPSettings) { c.Weights = "sizes" }) }, "algorithm.pfedgp.weights"},
		{func(s *fl.Settings) { s.Hyper.Layers = 0 }, "algorithm.hyper.layers"},
		{func(s *fl.Settings) { s.Name = "fedrep"; fl.EditOwn(s, func(c *algo.FedRepConfig) { c.RepEpochs = 2 }) }, "algorithm.fedrep.rep_epochs"},
		{func(s *fl.Settings) { fl.EditOwn(s, func(c *algo.FedBABUConfig) { c.FineTuneEpochs = 0 }) }, "algorithm.fedbabu.fine_tune_epochs"},
		{func(s *fl.Settings) { fl.EditOwn(s, func(c *algo.FedBABUConfig) { c.FineTuneSteps = -1 }) }, "algorithm.fedbabu.fine_tune_steps"},
		{func(s *fl.Settings) { s.Name, s.Generate = "pfedhn", []string{"mlp"} }, "algorithm.generate"},
		{func(s *fl.Settings) { s.Name = "partial" }, "algorithm.local_roles"},
		{func(s *fl.Settings) {
			s.Name = "pfedgp-ip"
			fl.EditOwn(s, func(c *algo.PFedGPSettings) { c.Objective = "marginal" })
		}, "algorithm.pfedgp.objective"},
		{func(s *fl.Settings) { s.Name = "fedsgd" }, "algorithm.name"},
	} {
		s := fl.DefaultSettings()
		c.set(&s)
		err := s.Resolve(0.01).Validate(2)
		if err == nil || !strings.HasPrefix(err.Error(), c.key+":") {
			t.Errorf("want an error naming %s, got %v", c.key, err)
		}
	}
}
