package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ReadJSON reads a run's config.json (a Config as JSON writes it) over the defaults, with
// Load's reader: strictly (an unknown key, a value of the wrong type or data after the
// object is an error naming it), and whole: a file that lacks a key every run writes is
// refused (decoded over the defaults, a truncated or hand-made file, {} at the extreme,
// would describe the default run, and a report or resume would show or continue a run that
// never was). A legacy 0 for an optional size reads as unset. It does not resolve.
func ReadJSON(b []byte) (Config, error) {
	b, err := unsetLegacyZeros(b)
	if err != nil {
		return Config{}, err
	}
	if err := complete(b); err != nil {
		return Config{}, err
	}
	cfg, _, err := Load(Sources{File: b, JSON: true})
	return cfg, err
}

// legacyZeroKeys are the keys that were plain numbers, 0 meaning unset (the preset's or the
// algorithm's value), before they became optional (null when unset): a config.json written
// then records 0 where the run used the default. pfl never writes an explicit 0 there now
// (validation refuses it), so a 0 in such a file is read as unset.
var legacyZeroKeys = []string{"model.depth", "model.patch", "model.dim", "model.heads", "model.head_dim",
	"model.mlp", "model.prompts", "model.prefix.blocks", "model.prefix.mid", "model.prefix.scale",
	"model.prefix.length", "model.adapter.mid", "model.adapter.scale"}

// unsetLegacyZeros rewrites legacyZeroKeys' zeros in a config.json as null (b unchanged when
// it has none).
func unsetLegacyZeros(b []byte) ([]byte, error) {
	var tree map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // a seed beyond 2^53 keeps its digits
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the config object")
	}
	changed := false
	for _, key := range legacyZeroKeys {
		parts := strings.Split(key, ".")
		m := tree
		for _, p := range parts[:len(parts)-1] {
			if m, _ = m[p].(map[string]any); m == nil {
				break
			}
		}
		if v, ok := m[parts[len(parts)-1]].(json.Number); ok && v.String() == "0" {
			m[parts[len(parts)-1]] = nil
			changed = true
		}
	}
	if !changed {
		return b, nil
	}
	return json.Marshal(tree)
}

// complete refuses a config.json that lacks a key every run writes (all but seeds and
// sweep, which a run without them leaves out).
func complete(b []byte) error {
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return err
	}
	have := map[string]bool{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			have[prefix+k] = true
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
			}
		}
	}
	walk("", tree)
	want, err := Flatten(Default())
	if err != nil {
		return err
	}
	var missing []string
	for k := range want {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	list := strings.Join(missing, ", ")
	if len(missing) > 5 {
		list = fmt.Sprintf("%s and %d more", strings.Join(missing[:5], ", "), len(missing)-5)
	}
	return fmt.Errorf("lacks %s (keys every run writes): not a config.json pfl wrote, or cut short", list)
}
