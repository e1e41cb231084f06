package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"pfl/configs"
	"pfl/cuda"
	"pfl/engine/data/fetch"
	"pfl/engine/dist"
	"pfl/engine/experiment"
	"pfl/engine/fl"
	"pfl/internal/suggest"
)

// setFlags collects repeatable --set key=value overrides.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// loadConfig reads an experiment config over the defaults: the file (YAML, or JSON for a
// run's config.json; empty path: the embedded demo), then PFL_* environment variables
// (PFL_TRAIN_ROUNDS=10 sets train.rounds), then --set overrides, decoded into the typed
// struct. An unknown key, a value of the wrong type (3.7 for a count), a key given no
// value and an empty file are errors naming the key and the source that gave it (the file,
// the variable or --set); a key the sources do not name keeps its default, and a key they
// name keeps their value, zero included.
func loadConfig(path string, sets []string) (experiment.Config, error) {
	cfg, _, err := loadConfigSources(path, sets)
	return cfg, err
}

// configSource reads the config file at path: the embedded demo for "", else the file, or,
// when no such file exists and path names no folder, the embedded config of that name (with
// or without .yaml), so `-c quickstart-fmnist` works from any directory. where names it for
// messages.
func configSource(path string) (src []byte, where string, err error) {
	if path == "" {
		src, err = configs.Files.ReadFile(configs.Demo)
		return src, "the built-in demo " + configs.Demo, err
	}
	src, err = experiment.ReadConfigFile(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) || strings.ContainsRune(path, os.PathSeparator) {
		return src, path, err
	}
	for _, name := range []string{path, path + ".yaml"} {
		if b, embedErr := configs.Files.ReadFile(name); embedErr == nil {
			return b, "the built-in config " + name, nil
		}
	}
	return nil, path, fmt.Errorf("%w; no built-in config is named %s either%s (pfl configs lists them)", err, path, suggest.DidYouMean(strings.TrimSuffix(path, ".yaml"), builtinNames()))
}

// loadConfigSources is loadConfig that also says where each key's value came from: the
// file, the variable or the --set that gave it last (keys no source names are absent).
func loadConfigSources(path string, sets []string) (experiment.Config, map[string]string, error) {
	src, where, err := configSource(path)
	if err != nil {
		return experiment.Config{}, nil, err
	}
	v := viper.New()
	v.SetConfigType("yaml")
	if strings.HasSuffix(path, ".json") {
		v.SetConfigType("json")
	}
	if err := v.ReadConfig(bytes.NewReader(src)); err != nil {
		return experiment.Config{}, nil, fmt.Errorf("%s: %w", where, err)
	}
	if len(v.AllKeys()) == 0 {
		return experiment.Config{}, nil, fmt.Errorf("%s sets no key; write the keys to change (configs/ has examples), or run without -c for the demo", where)
	}
	// Each value is checked, and converted to its key's type, where it comes from, so that
	// an error blames the file, the variable or the --set that gave it. A run's config.json
	// writes "" and null for keys left unset, so only a written config must give each key
	// it names a value.
	fields := configFields()
	strict := !strings.HasSuffix(path, ".json")
	// unset holds the optional keys a later source unset (null): viper cannot unset a key
	// the file sets, so they are cleared after decoding
	unset := map[string]bool{}
	// setBy records which source set a key last (fromFile, fromEnv, fromSet): a later
	// source's seed or seeds replaces the other key an earlier one set, and a suite given
	// by a later source keeps the file's settings of the members it names.
	source := fromFile
	setBy := map[string]int{}
	given := map[string]string{} // the variable or --set that gave a key, for messages
	var fileSuite []string
	put := func(key string, val any) {
		setBy[key] = source
		if source == fromEnv {
			given[key] = "environment variable " + envName(key)
		}
		if val == nil {
			unset[key] = true
			return
		}
		delete(unset, key)
		v.Set(key, val)
	}
	for _, key := range v.AllKeys() {
		t, ok := fields[key]
		if !ok {
			continue // the sweep block, read below; an unknown key, which decoding names
		}
		val, problem := typedValue(t, v.Get(key), strict)
		if problem != "" {
			return experiment.Config{}, nil, fmt.Errorf("config (%s): %s: %s", where, key, problem)
		}
		put(key, val)
		if l, ok := val.([]any); ok && key == "suite" {
			for _, e := range l {
				fileSuite = append(fileSuite, fmt.Sprint(e))
			}
		}
	}
	source = fromEnv
	if err := applyEnv(put, os.Environ(), fields); err != nil {
		return experiment.Config{}, nil, err
	}
	source = fromSet
	for _, s := range sets {
		key, val, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return experiment.Config{}, nil, fmt.Errorf("--set %q: want key=value, e.g. train.rounds=10", s)
		}
		key = strings.ToLower(key) // as viper keys are
		t, known := fields[key]
		switch {
		case key == "sweep" || strings.HasPrefix(key, "sweep."):
			v.Set(key, setValue(val)) // checked with the sweep block below
			continue
		case !known:
			return experiment.Config{}, nil, fmt.Errorf("--set %s: no config key %s (keys are written section.key, as in configs/*.yaml)", s, key)
		}
		x, problem := typedValue(t, setValue(val), true)
		if problem == noValue {
			return experiment.Config{}, nil, fmt.Errorf("--set %s: no value; write %s=<value>", s, key)
		}
		if val == "null" && t.Kind() != reflect.Pointer {
			hint := ""
			if key == "seed" {
				hint = "; to run several seeds instead, --set seeds=[1,2] replaces the file's seed"
			}
			return experiment.Config{}, nil, fmt.Errorf("--set %s: %s cannot be unset; null unsets only the optional keys (the model's sizes and plug-ins, algorithm.hyper.lr, novel.lr)%s", s, key, hint)
		}
		if problem != "" {
			return experiment.Config{}, nil, fmt.Errorf("--set %s: %s", key, problem)
		}
		put(key, x)
		given[key] = "--set " + s
	}
	seedBy, seed := setBy["seed"]
	seedsBy, seeds := setBy["seeds"]
	if seed && seeds && seedBy == seedsBy {
		return experiment.Config{}, nil, fmt.Errorf("%s: seed and seeds are both set; keep seed for one run or seeds for one run per seed (a later source's seed or seeds replaces the other: --set seeds=[1,2] over a file's seed)",
			sourceName(seedBy, where))
	}
	// the sweep block is read apart: its keys are dotted config keys, which viper would
	// split into sections, and its order (the first key is the plots' x axis) matters
	in := struct {
		experiment.Config `mapstructure:",squash"`
		Sweep             any `mapstructure:"sweep"`
	}{Config: experiment.DefaultConfig()}
	if err := decodeConfig(v.AllSettings(), &in, &in.Config); err != nil {
		return experiment.Config{}, nil, fmt.Errorf("config (%s): %w", where, err)
	}
	cfg := in.Config
	for key := range unset {
		clearKey(&cfg, key)
	}
	switch {
	case seed && seeds && seedsBy > seedBy:
		cfg.Seed = experiment.DefaultConfig().Seed // seeds given later replace the seed
	case seed && seeds && seedBy > seedsBy:
		cfg.Seeds = nil
	}
	if setBy["suite"] != fromFile {
		cfg.Suite = keepMemberSettings(cfg.Suite, fileSuite)
	}
	if in.Sweep != nil {
		if cfg.Sweep, err = sweepAxes(in.Sweep, yamlOrder(src, "sweep")); err != nil {
			return experiment.Config{}, nil, fmt.Errorf("config (%s): %w", where, err)
		}
	}
	if err := overridden(cfg, given); err != nil {
		return experiment.Config{}, nil, err
	}
	sources := map[string]string{}
	for key, by := range setBy {
		sources[key] = sourceName(by, where)
		if g, ok := given[key]; ok {
			sources[key] = g
		}
	}
	if in.Sweep != nil {
		sources["sweep"] = "config (" + where + ")"
		for _, s := range sets {
			if strings.HasPrefix(strings.ToLower(s), "sweep") {
				sources["sweep"] = "--set"
			}
		}
	}
	return cfg, sources, nil
}

// decodeConfig decodes all (viper's settings: nested maps of typed values) into out, a
// struct that squashes experiment.Config (cfg, inside out), over its values: the rest as
// viper decodes it, then the algorithms' own sections (algorithm.pfedme, …), which the
// registry declares, each into its type. An unknown key is an error, not a silent default.
func decodeConfig(all map[string]any, out any, cfg *experiment.Config) error {
	own := map[string]any{}
	if alg, ok := all["algorithm"].(map[string]any); ok {
		rest := map[string]any{}
		for k, val := range alg {
			if _, isOwn := fl.OwnDefault(k); isOwn {
				own[k] = val
				continue
			}
			rest[k] = val
		}
		all["algorithm"] = rest
	}
	if err := decodeStrictly(all, out); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		// decoded inside a struct shaped {algorithm: {k: section}}, so that an error names
		// the key as a whole config's would (algorithm.pfedme.lamda)
		cur := reflect.ValueOf(cfg.Algorithm.Section(k))
		inner := reflect.StructOf([]reflect.StructField{{Name: "Section", Type: cur.Type(), Tag: reflect.StructTag(`mapstructure:"` + k + `"`)}})
		outer := reflect.StructOf([]reflect.StructField{{Name: "Algorithm", Type: inner, Tag: `mapstructure:"algorithm"`}})
		v := reflect.New(outer)
		sec := v.Elem().Field(0).Field(0)
		sec.Set(cur)
		if err := decodeStrictly(map[string]any{"algorithm": map[string]any{k: own[k]}}, v.Interface()); err != nil {
			return err
		}
		if err := cfg.Algorithm.SetSection(k, sec.Interface().(fl.Section)); err != nil {
			return err
		}
	}
	return nil
}

// decodeStrictly decodes in into out as viper's Unmarshal does (its weak typing and
// hooks), refusing unknown keys.
func decodeStrictly(in, out any) error {
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result: out, WeaklyTypedInput: true, ErrorUnused: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(mapstructure.StringToTimeDurationHookFunc(), stringToList),
	})
	if err != nil {
		return err
	}
	return dec.Decode(in)
}

// stringToList is viper's decoding of a string into a list: split at commas, "" empty.
func stringToList(f, t reflect.Type, data any) (any, error) {
	if f.Kind() != reflect.String || t.Kind() != reflect.Slice {
		return data, nil
	}
	if data.(string) == "" {
		return []string{}, nil
	}
	return strings.Split(data.(string), ","), nil
}

// The sources of config values, in the order they apply.
const (
	fromFile = iota // the config file (or the embedded demo)
	fromEnv         // PFL_* environment variables
	fromSet         // --set
)

// sourceName names a source for messages; where names the file.
func sourceName(source int, where string) string {
	switch source {
	case fromEnv:
		return "the environment"
	case fromSet:
		return "--set"
	}
	return "config (" + where + ")"
}

// keepMemberSettings returns suite with every entry that is a bare name ("transfed") and
// that the file's suite lists as a labelled member ("transfed: algorithm.name=transfed;
// model.preset=focalnet-cifar; ...") replaced by the file's entry: a member named on the
// command line keeps the settings the file gave it, as it does in the file.
func keepMemberSettings(suite, fileSuite []string) []string {
	out := slices.Clone(suite)
	for i, e := range out {
		if strings.Contains(e, ":") {
			continue
		}
		for _, f := range fileSuite {
			if label, _, ok := strings.Cut(f, ":"); ok && strings.TrimSpace(label) == strings.TrimSpace(e) {
				out[i] = f
				break
			}
		}
	}
	return out
}

// overridden refuses a value that the environment or --set gave (given: the key and who
// gave it) for a key that every suite member sets, or that the sweep sets: no run would
// use it, and it would never be checked (pfl train --set algorithm.name=__none__ on the
// demo would run the demo's five algorithms).
func overridden(cfg experiment.Config, given map[string]string) error {
	keys := slices.Sorted(maps.Keys(given))
	for _, key := range keys {
		for _, a := range cfg.Sweep {
			if a.Key == key {
				return fmt.Errorf("%s: the sweep sets %s (to %s in turn), so this value would be ignored; change the sweep's values instead", given[key], key, strings.Join(a.Values, ", "))
			}
		}
		if len(cfg.Suite) == 0 {
			continue
		}
		every := true
		for _, e := range cfg.Suite {
			mk, err := experiment.MemberKeys(e)
			if err != nil {
				return nil // a malformed member: the suite's check names it
			}
			every = every && slices.Contains(mk, key)
		}
		if every {
			return fmt.Errorf("%s: every member of the suite sets %s (suite: %s), so this value would be ignored; pick the members with --set 'suite=[...]' (a bare name sets algorithm.name), or run without a suite: --set 'suite=[]'",
				given[key], key, strings.Join(memberLabels(cfg.Suite), ", "))
		}
	}
	return nil
}

// memberLabels are the suite entries' labels (the part before ":").
func memberLabels(suite []string) []string {
	out := make([]string, len(suite))
	for i, e := range suite {
		label, _, _ := strings.Cut(e, ":")
		out[i] = strings.TrimSpace(label)
	}
	return out
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

// noValue is typedValue's problem with a key given no value.
const noValue = "no value"

// typedValue converts raw, a value as a source gives it (YAML's and JSON's strings,
// numbers, booleans, lists and nulls; the strings and lists of environment variables and
// --set), to a value of the key's type t, or says in plain words what keeps it from being
// one ("3.7 is not a whole number", "-2 is negative"). An optional key (a pointer: the
// model sizes, algorithm.hyper.lr) takes null, which leaves it unset (nil is returned).
// Strict, any other key given no value (YAML's "rounds:", --set train.rounds=, an empty
// variable) is an error: decoding would read it as 0, false or "", a value nobody wrote.
func typedValue(t reflect.Type, raw any, strict bool) (any, string) {
	if t.Kind() == reflect.Pointer && (raw == nil || raw == "null") {
		return nil, "" // an optional key (model.depth) unset: the preset's or algorithm's
	}
	if s, isString := raw.(string); raw == nil || (isString && s == "") {
		if strict {
			return nil, noValue
		}
		return raw, ""
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice {
		var items []any
		switch l := raw.(type) {
		case []any:
			items = l
		case []string:
			for _, s := range l {
				items = append(items, s)
			}
		default:
			items = []any{raw} // one value for a list: suite: fedavg
		}
		out := []any{} // an empty list stays a list (algorithm.local_roles: [])
		for _, it := range items {
			x, problem := typedValue(t.Elem(), it, strict)
			if problem != "" {
				return nil, problem
			}
			out = append(out, x)
		}
		return out, ""
	}
	text := valueText(raw)
	switch raw.(type) {
	case []any, []string, map[string]any:
		return nil, fmt.Sprintf("%s is a list or section; want one value", text)
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		f, ok := number(raw)
		switch {
		case !ok || f != math.Trunc(f) || math.IsInf(f, 0):
			return nil, text + " is not a whole number"
		case f < math.MinInt64 || f >= math.MaxInt64:
			return nil, text + " is out of range"
		}
		if s, isString := raw.(string); isString {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, "" // exact, beyond float64's 2^53
			}
		}
		return int64(f), ""
	case reflect.Uint64:
		f, ok := number(raw)
		switch {
		case !ok || f != math.Trunc(f) || math.IsInf(f, 0):
			return nil, text + " is not a whole number"
		case f < 0:
			return nil, text + " is negative; want a whole number >= 0"
		case f >= math.MaxUint64:
			return nil, text + " is out of range"
		}
		if s, isString := raw.(string); isString {
			if n, err := strconv.ParseUint(s, 10, 64); err == nil {
				return n, ""
			}
		}
		switch n := raw.(type) {
		case int:
			return uint64(n), ""
		case uint64:
			return n, ""
		}
		return uint64(f), ""
	case reflect.Float64:
		f, ok := number(raw)
		if !ok {
			return nil, text + " is not a number"
		}
		return f, ""
	case reflect.Bool:
		switch b := raw.(type) {
		case bool:
			return b, ""
		case string:
			if v, err := strconv.ParseBool(b); err == nil {
				return v, ""
			}
		}
		return nil, text + " is not true or false"
	case reflect.String:
		return text, ""
	}
	return nil, fmt.Sprintf("a value of type %s, which this reader does not convert", t)
}

// number reads raw as a real number: a YAML or JSON number, or a string that spells one
// (Inf and NaN included: Validate names the key that refuses them).
func number(raw any) (float64, bool) {
	switch x := raw.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil || errors.Is(err, strconv.ErrRange)
	}
	return 0, false
}

// configKeys lists every key of experiment.Config (data.clients, train.rounds, …) from the
// struct's mapstructure tags, in the struct's order.
func configKeys() []string {
	var keys []string
	walkConfig(func(key string, _ reflect.Type) { keys = append(keys, key) })
	return keys
}

// configFields maps every key of experiment.Config to its field's type.
func configFields() map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	walkConfig(func(key string, t reflect.Type) { fields[key] = t })
	return fields
}

// clearKey sets the optional key (a pointer field) of cfg to nil.
func clearKey(cfg *experiment.Config, key string) {
	if sec, rest, ok := ownKey(key); ok {
		v := reflect.New(reflect.TypeOf(cfg.Algorithm.Section(sec)))
		v.Elem().Set(reflect.ValueOf(cfg.Algorithm.Section(sec)))
		if f, ok := configField(v.Elem(), rest); ok && f.Kind() == reflect.Pointer {
			f.SetZero()
			_ = cfg.Algorithm.SetSection(sec, v.Elem().Interface().(fl.Section)) // of the section's own type
		}
		return
	}
	if v, ok := configField(reflect.ValueOf(cfg).Elem(), key); ok && v.Kind() == reflect.Pointer {
		v.SetZero()
	}
}

// ownKey splits a key of an algorithm's own section (algorithm.pfedme.lambda) into the
// section (pfedme) and the key in it (lambda).
func ownKey(key string) (section, rest string, ok bool) {
	after, isAlg := strings.CutPrefix(key, "algorithm.")
	section, rest, dotted := strings.Cut(after, ".")
	if _, isOwn := fl.OwnDefault(section); !isAlg || !dotted || !isOwn {
		return "", "", false
	}
	return section, rest, true
}

// configField is the field of the config value v (an experiment.Config) at key, found by
// the fields' mapstructure names; in an algorithm's own section, a copy of the field (the
// sections are values: fl.Settings.SetSection writes them).
func configField(v reflect.Value, key string) (reflect.Value, bool) {
	for _, part := range strings.Split(key, ".") {
		if s, ok := v.Interface().(fl.Settings); ok {
			if _, isOwn := fl.OwnDefault(part); isOwn {
				v = reflect.ValueOf(s.Section(part))
				continue
			}
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Tag.Get("mapstructure") == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return v, false
		}
	}
	return v, true
}

// walkConfig calls visit with every key of experiment.Config and its field's type.
func walkConfig(visit func(key string, t reflect.Type)) {
	walkConfigFields(func(key string, _ reflect.Type, f reflect.StructField) { visit(key, f.Type) })
}

// walkConfigFields calls visit with every key of experiment.Config, in declaration order
// (the algorithms' own sections after the algorithm section's fields, in the registry's
// order), with the struct type that declares its field and the field.
func walkConfigFields(visit func(key string, owner reflect.Type, f reflect.StructField)) {
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
			visit(prefix+name, t, f)
		}
		if t == reflect.TypeOf(fl.Settings{}) { // the algorithms' own sections, from the registry
			for _, k := range fl.OwnKeys() {
				def, _ := fl.OwnDefault(k)
				walk(prefix+k+".", reflect.TypeOf(def))
			}
		}
	}
	walk("", reflect.TypeOf(experiment.Config{}))
}

// envName is the environment variable of a key: train.eval_every is PFL_TRAIN_EVAL_EVERY.
func envName(key string) string {
	return "PFL_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// ownVariables are the PFL_* environment variables that pfl, its native library, its
// tests and its scripts read for purposes of their own; every other PFL_* variable must
// name a config key, so that a misspelt one (PFL_TRAINN_ROUNDS) is not silently ignored.
// Keep the list whole: a variable missing here makes every run under it fail.
var ownVariables = []string{
	cuda.LibraryEnv, cuda.HostCacheEnv, cuda.HostCacheCapEnv, dist.EnvTimeout, fetch.RootEnv, fetch.MirrorEnv,
	"PFL_LEAK_LOG", "PFL_BACKTRACE", // debugging switches of cuda/ and the native library
	"PFL_REQUIRE_TEST_DATA", "PFL_MAPS_OUT", "PFL_KEEP_HEATMAP", "PFL_BENCH_DEVICE", // tests
	"PFL_FUZZTIME", "PFL_FUZZMINIMIZE", "PFL_FUZZTIMEOUT", "PFL_PYTHON", "PFL_HEADERS_DIR", // scripts/, bench/
	"PFL_NVCC_ARCH", "PFL_GPU_OUT", "PFL_BENCH_PRECISIONS",
	// bench/gpu.sh's: its steps run pfl with them set
	"PFL_GPU_BUDGET", "PFL_GPU_CUDA_ROOT", "PFL_GPU_NVCC", "PFL_GPU_REBUILD", "PFL_GPU_REHEARSE", "PFL_KEEP_REHEARSAL",
	"PFL_FEDTP_OFFICIAL", "PFL_FEDTP_OFFICIAL_DATA", "PFL_FEDTP_OFFICIAL_ROUNDS",
}

// ownPrefix starts the variables of the command's own tests (PFL_TEST_AS_PFL, which makes
// the test binary act as pfl, and the PFL_TEST_CHILD_* of its child processes).
const ownPrefix = "PFL_TEST_"

// applyEnv sets (put) every key whose PFL_* variable is in env (whether or not the file
// names the key), converted to the key's type (fields). A PFL_ variable that names no key
// and is not one of ownVariables is an error, as is a bad value, naming the variable.
func applyEnv(put func(key string, val any), env []string, fields map[string]reflect.Type) error {
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
			x, problem := typedValue(fields[key], setValue(val), true)
			if problem == noValue {
				return fmt.Errorf("environment variable %s (%s) is empty; give it a value or unset it", name, key)
			}
			if problem != "" {
				return fmt.Errorf("environment variable %s (%s): %s", name, key, problem)
			}
			put(key, x)
			continue
		}
		if slices.Contains(ownVariables, name) || strings.HasPrefix(name, ownPrefix) {
			continue
		}
		for _, sec := range sections {
			if strings.HasPrefix(name, envName(sec)+"_") {
				return fmt.Errorf("environment variable %s names no config key (%s_* keys: %s)", name, envName(sec), strings.Join(keysOf(keys, sec), ", "))
			}
		}
		return fmt.Errorf("environment variable %s names no config key (PFL_<KEY> sets a key: PFL_TRAIN_ROUNDS sets train.rounds) and is none of the variables pfl reads otherwise (%s); unset it",
			name, strings.Join(ownVariables, ", "))
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
// algorithm.generate, novel.tune, a sweep's values), anything else a string that decoding
// converts to the key's type. A list item may be quoted, as in YAML's flow style, and then
// holds commas, brackets and semicolons of its own: --set 'suite=[fedtp, "p: a=[x, y]; b=2"]'
// is two members, the second without its quotes.
func setValue(val string) any {
	inner, ok := strings.CutPrefix(val, "[")
	if inner, ok2 := strings.CutSuffix(inner, "]"); ok && ok2 {
		items := []string{}
		for _, it := range splitItems(inner) {
			if it = unquote(strings.TrimSpace(it)); it != "" {
				items = append(items, it)
			}
		}
		return items
	}
	return val
}

// splitItems splits a list's inside at the commas outside quotes and brackets.
func splitItems(s string) []string {
	var items []string
	var quote rune
	depth, start := 0, 0
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '[':
			depth++
		case r == ']':
			depth--
		case r == ',' && depth == 0:
			items = append(items, s[start:i])
			start = i + 1
		}
	}
	return append(items, s[start:])
}

// unquote strips one pair of matching quotes around an item.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
