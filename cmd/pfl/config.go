package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"pfl/configs"
	"pfl/engine/experiment"
)

// setFlags collects repeatable --set key=value overrides.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// loadConfig reads an experiment config over the defaults: the file (YAML, or JSON for a
// run's config.json; empty path: the embedded demo), then PFL_* environment variables
// (PFL_TRAIN_ROUNDS=10 sets train.rounds), then --set overrides, decoded into the typed
// struct. An unknown key, a value of the wrong type (3.7 for a count) and an empty file are
// errors naming the key or file; a key the sources do not name keeps its default, and a
// key they name keeps their value, zero included.
func loadConfig(path string, sets []string) (experiment.Config, error) {
	where := path
	var src []byte
	var err error
	if path == "" {
		where = "the built-in demo " + configs.Demo
		src, err = configs.Files.ReadFile(configs.Demo)
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		return experiment.Config{}, err
	}
	v := viper.New()
	v.SetConfigType("yaml")
	if strings.HasSuffix(path, ".json") {
		v.SetConfigType("json")
	}
	if err := v.ReadConfig(bytes.NewReader(src)); err != nil {
		return experiment.Config{}, fmt.Errorf("%s: %w", where, err)
	}
	if len(v.AllKeys()) == 0 {
		return experiment.Config{}, fmt.Errorf("%s sets no key; write the keys to change (configs/ has examples), or run without -c for the demo", where)
	}
	if err := applyEnv(v, os.Environ()); err != nil {
		return experiment.Config{}, err
	}
	for _, s := range sets {
		key, val, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return experiment.Config{}, fmt.Errorf("--set %q: want key=value, e.g. train.rounds=10", s)
		}
		v.Set(key, setValue(val))
	}
	if v.IsSet("seed") && v.IsSet("seeds") {
		return experiment.Config{}, fmt.Errorf("config (%s): seed and seeds are both set; keep seed for one run or seeds for one run per seed", where)
	}
	// the sweep block is read apart: its keys are dotted config keys, which viper would
	// split into sections, and its order (the first key is the plots' x axis) matters
	in := struct {
		experiment.Config `mapstructure:",squash"`
		Sweep             any `mapstructure:"sweep"`
	}{Config: experiment.DefaultConfig()}
	err = v.Unmarshal(&in, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true      // a misspelt key is an error, not a silent default
		dc.WeaklyTypedInput = true // --set and environment values arrive as strings
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(wholeNumbers, dc.DecodeHook)
	})
	if err != nil {
		return experiment.Config{}, fmt.Errorf("config (%s): %w", where, err)
	}
	cfg := in.Config
	if in.Sweep != nil {
		if cfg.Sweep, err = sweepAxes(in.Sweep, yamlOrder(src, "sweep")); err != nil {
			return experiment.Config{}, fmt.Errorf("config (%s): %w", where, err)
		}
	}
	return cfg, nil
}

// sweepAxes reads a sweep block: a mapping from dotted keys to lists of values (viper
// hands it over as nested sections), ordered as order lists the keys (the rest sorted), or
// the list of {key, values} a run's config.json holds.
func sweepAxes(raw any, order []string) ([]experiment.SweepAxis, error) {
	if list, ok := raw.([]any); ok {
		var out []experiment.SweepAxis
		for i, item := range list {
			m, ok := item.(map[string]any)
			key, _ := m["key"].(string)
			vals, isList := m["values"].([]any)
			if !ok || key == "" || !isList || len(m) != 2 {
				return nil, fmt.Errorf("sweep: entry %d is not {key, values}; write the sweep as a mapping, e.g. data.alpha: [0.1, 0.5]", i+1)
			}
			a := experiment.SweepAxis{Key: key}
			for _, v := range vals {
				a.Values = append(a.Values, valueText(v))
			}
			out = append(out, a)
		}
		return out, nil
	}
	byKey := map[string][]string{}
	var walk func(prefix string, node any) error
	walk = func(prefix string, node any) error {
		if m, ok := node.(map[string]any); ok {
			for k, v := range m {
				if err := walk(prefix+k+".", v); err != nil {
					return err
				}
			}
			return nil
		}
		key := strings.TrimSuffix(prefix, ".")
		if key == "" {
			return fmt.Errorf("sweep: want a mapping from config keys to lists of values, e.g. data.alpha: [0.1, 0.5]")
		}
		var vals []any
		switch n := node.(type) {
		case []any:
			vals = n
		case []string:
			for _, s := range n {
				vals = append(vals, s)
			}
		default:
			return fmt.Errorf("sweep: %s: %v is not a list of values; write %s: [a, b]", key, node, key)
		}
		for _, v := range vals {
			byKey[key] = append(byKey[key], valueText(v))
		}
		if len(vals) == 0 {
			byKey[key] = []string{}
		}
		return nil
	}
	if err := walk("", raw); err != nil {
		return nil, err
	}
	var keys []string
	for _, k := range order {
		if _, ok := byKey[k]; ok && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range byKey {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	var out []experiment.SweepAxis
	for _, k := range append(keys, rest...) {
		out = append(out, experiment.SweepAxis{Key: k, Values: byKey[k]})
	}
	return out, nil
}

// valueText writes a sweep value as a suite member's value is written: a number or word
// as such, a list as [a, b], anything else as JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var items []string
		for _, it := range x {
			items = append(items, valueText(it))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case float64, float32, int, int64, uint64, bool:
		return fmt.Sprint(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// yamlOrder lists the dotted keys under the top-level key section of a YAML document in
// the order written ("data.alpha" for both data.alpha: and data: {alpha:}); nil when src
// does not parse or has no such section.
func yamlOrder(src []byte, section string) []string {
	var doc yaml.Node
	if yaml.Unmarshal(src, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := prefix+strings.ToLower(n.Content[i].Value), n.Content[i+1]
			if v.Kind == yaml.MappingNode {
				walk(k+".", v)
			} else {
				out = append(out, k)
			}
		}
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == section && top.Content[i+1].Kind == yaml.MappingNode {
			walk("", top.Content[i+1])
		}
	}
	return out
}

// wholeNumbers refuses a fractional or out-of-range number for an integer key (YAML's
// rounds: 3.7 would otherwise be truncated to 3, while --set train.rounds=3.7 is refused).
func wholeNumbers(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.Float64 && from.Kind() != reflect.Float32 {
		return data, nil
	}
	f := reflect.ValueOf(data).Float()
	switch to.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
			return nil, fmt.Errorf("%v is not a whole number in range", data)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if f != math.Trunc(f) || f < 0 || f >= 1<<64 {
			return nil, fmt.Errorf("%v is not a whole non-negative number in range", data)
		}
	}
	return data, nil
}

// configKeys lists every key of experiment.Config (data.clients, train.rounds, …) from the
// struct's mapstructure tags.
func configKeys() []string {
	var keys []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := f.Tag.Get("mapstructure")
			if name == "" || name == "-" {
				continue
			}
			if f.Type.Kind() == reflect.Struct {
				walk(prefix+name+".", f.Type)
				continue
			}
			keys = append(keys, prefix+name)
		}
	}
	walk("", reflect.TypeOf(experiment.Config{}))
	return keys
}

// envName is the environment variable of a key: train.eval_every is PFL_TRAIN_EVAL_EVERY.
func envName(key string) string {
	return "PFL_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// applyEnv sets every key whose PFL_* variable is in env (whether or not the file names the
// key). A PFL_ variable that starts like a config section but names no key is an error.
func applyEnv(v *viper.Viper, env []string) error {
	keys := configKeys()
	byEnv := map[string]string{}
	for _, k := range keys {
		byEnv[envName(k)] = k
	}
	var sections []string
	for _, k := range keys {
		if sec, _, ok := strings.Cut(k, "."); ok && !slices.Contains(sections, sec) {
			sections = append(sections, sec)
		}
	}
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "PFL_") {
			continue
		}
		if key, ok := byEnv[name]; ok {
			v.Set(key, setValue(val))
			continue
		}
		for _, sec := range sections {
			if strings.HasPrefix(name, envName(sec)+"_") {
				return fmt.Errorf("environment variable %s names no config key (%s_* keys: %s)", name, envName(sec), strings.Join(keysOf(keys, sec), ", "))
			}
		}
	}
	return nil
}

func keysOf(keys []string, section string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, section+".") {
			out = append(out, envName(k))
		}
	}
	return out
}

// setValue reads a --set or environment value: "[a, b]" is a list (suite,
// algorithm.generate, novel.tune), anything else a string that decoding converts to the
// key's type.
func setValue(val string) any {
	inner, ok := strings.CutPrefix(val, "[")
	if inner, ok2 := strings.CutSuffix(inner, "]"); ok && ok2 {
		items := []string{}
		for _, it := range strings.Split(inner, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		return items
	}
	return val
}
