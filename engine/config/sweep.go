package config

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SweepAxis is one key of a sweep and the values it takes, each as written in the config
// (the spelling a suite member's value has: a bracketed list or a plain word).
type SweepAxis struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// axisRaw is one key of a sweep block as a file writes it, its values not yet read.
type axisRaw struct {
	key  string
	vals any
}

// sweepBlock is the sweep as the sources give it: a file's axes in the order written, then
// the axes --set adds (sorted) or replaces (in place), or a whole block --set replaces.
type sweepBlock struct {
	where string    // the source that gave it last, for Origins
	axes  []axisRaw // nil: none given
	other any       // a block that is neither a mapping of keys nor config.json's list
	files int       // how many of axes the file gave (the rest --set added)
	isSet bool
}

// given reports whether a source gave a sweep.
func (b *sweepBlock) given() bool { return b.isSet }

// orderedSweep reads the sweep block of a YAML document's top mapping with its keys in the
// order written ("data.alpha" for both data.alpha: and data: {alpha:}); nil for a block
// given no value, the decoded value for a block that is no mapping.
func orderedSweep(top *yaml.Node) any {
	for i := 0; i+1 < len(top.Content); i += 2 {
		if strings.ToLower(top.Content[i].Value) != "sweep" {
			continue
		}
		n := top.Content[i+1]
		if n.Kind != yaml.MappingNode {
			var v any
			_ = n.Decode(&v)
			return v
		}
		var axes []axisRaw
		var walk func(prefix string, n *yaml.Node)
		walk = func(prefix string, n *yaml.Node) {
			for j := 0; j+1 < len(n.Content); j += 2 {
				k, v := prefix+strings.ToLower(n.Content[j].Value), n.Content[j+1]
				if v.Kind == yaml.MappingNode {
					walk(k+".", v)
					continue
				}
				var x any
				_ = v.Decode(&x)
				axes = append(axes, axisRaw{key: k, vals: x})
			}
		}
		walk("", n)
		return axes
	}
	return nil
}

// fromFile takes a file's sweep block: the YAML axes in order (orderedSweep), or the list
// of {key, values} a run's config.json holds.
func (b *sweepBlock) fromFile(raw any) error {
	switch x := raw.(type) {
	case nil:
		return nil
	case []axisRaw:
		if len(x) == 0 {
			return nil // sweep: {} sweeps nothing
		}
		b.axes, b.files, b.isSet = x, len(x), true
	case []any:
		if len(x) == 0 {
			return nil
		}
		for i, item := range x {
			m, ok := item.(map[string]any)
			key, _ := m["key"].(string)
			vals, isList := m["values"].([]any)
			if !ok || key == "" || !isList || len(m) != 2 {
				return fmt.Errorf("sweep: entry %d is not {key, values}; write the sweep as a mapping, e.g. data.alpha: [0.1, 0.5]", i+1)
			}
			b.axes = append(b.axes, axisRaw{key: key, vals: vals})
		}
		b.files, b.isSet = len(b.axes), true
	default:
		b.other, b.isSet = raw, true
	}
	return nil
}

// set applies --set sweep.KEY=VALUES (key "KEY"), or --set sweep=VALUE (key ""), which
// replaces the whole block.
func (b *sweepBlock) set(key string, vals any) error {
	b.isSet = true
	if key == "" {
		b.axes, b.other, b.files = nil, vals, 0
		return nil
	}
	for i, a := range b.axes {
		if a.key == key {
			b.axes[i].vals = vals
			return nil
		}
	}
	b.axes = append(b.axes, axisRaw{key: key, vals: vals})
	return nil
}

// axes reads the block's axes: every value as a suite member's value is written
// (valueText), the file's keys in order, keys --set added sorted after them.
func (b *sweepBlock) read() ([]SweepAxis, error) {
	if b.other != nil || b.axes == nil {
		return nil, fmt.Errorf("sweep: want a mapping from config keys to lists of values, e.g. data.alpha: [0.1, 0.5]")
	}
	slices.SortFunc(b.axes[b.files:], func(a, c axisRaw) int { return strings.Compare(a.key, c.key) })
	var out []SweepAxis
	for _, a := range b.axes {
		vals, ok := a.vals.([]any)
		if !ok {
			return nil, fmt.Errorf("sweep: %s: %v is not a list of values; write %s: [a, b]", a.key, a.vals, a.key)
		}
		axis := SweepAxis{Key: a.key, Values: []string{}}
		for _, v := range vals {
			axis.Values = append(axis.Values, valueText(v))
		}
		out = append(out, axis)
	}
	return out, nil
}
