package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Sources are where a config's values come from, in the order they apply: the file (a
// YAML config, or a run's config.json) or a config already read, then the PFL_*
// environment variables, then the --set overrides. A key no source names keeps its
// default; a key a source names keeps that source's value, zero included.
type Sources struct {
	File  []byte // the file's contents: YAML, or JSON when JSON is set
	Where string // names the file in messages: its path, or "the built-in demo …"
	// JSON marks File as a run's config.json, which writes "" and null for keys left
	// unset: only a written config must give each key it names a value.
	JSON bool
	// Base, when not nil, is the config the other sources apply to instead of File (a
	// run's config, read by engine/rundir, that a resume changes with --set).
	Base *Config
	Env  []string // "NAME=value" entries, as os.Environ gives them; only PFL_* are read
	Sets []string // "key=value" overrides, as --set gives them
}

// Origins says where the value of each key a source named came from: "config (<file>)",
// "environment variable PFL_TRAIN_ROUNDS" or "--set train.rounds=5" (keys no source names
// are absent; the sweep is "sweep").
type Origins map[string]string

// Given are the keys that --set or a PFL_* variable gave, each with who gave it; a config
// file's keys are not among them.
func (o Origins) Given() map[string]string {
	out := map[string]string{}
	for key, src := range o {
		if strings.HasPrefix(src, "--set ") || strings.HasPrefix(src, "environment variable ") {
			out[key] = src
		}
	}
	return out
}

// MaxFileBytes bounds what is read of a config file (YAML, or a run's config.json): a
// config is a few kilobytes, and reading /dev/zero or a mistaken data file whole would
// exhaust the memory.
const MaxFileBytes = 4 << 20

// ReadFile reads the config file at path, refusing one larger than MaxFileBytes with an
// error naming the file and the bound.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most pfl reads of a config file (a config is a few KB: is it the right file?)", path, MaxFileBytes>>20)
	}
	return b, nil
}

// LoadFile reads the config file at path (YAML, or JSON for a run's config.json) as pfl
// train does: the file over the defaults, then the PFL_* variables of this process's
// environment, then sets (key=value, as --set). It is Load with those sources.
func LoadFile(path string, sets []string) (Config, Origins, error) {
	b, err := ReadFile(path)
	if err != nil {
		return Config{}, nil, err
	}
	return Load(Sources{File: b, Where: path, JSON: strings.HasSuffix(path, ".json"), Env: os.Environ(), Sets: sets})
}

// The sources of config values, in the order they apply.
const (
	fromFile = iota // the config file (or the config given)
	fromEnv         // PFL_* environment variables
	fromSet         // --set
)

// loader applies the sources to a config in turn, recording which set each key.
type loader struct {
	cfg       Config
	where     string
	source    int               // the source being applied
	setBy     map[string]int    // the source that set a key last
	given     map[string]string // the variable or --set that gave a key, for messages
	fileSuite []string          // the file's suite entries (keepMemberSettings)
	json      bool              // the file is a run's config.json
	sweep     *sweepBlock
}

// Load reads a config from its sources: an unknown key (with the keys closest to it), a
// value of the wrong type (3.7 for a count), a key given no value, an empty file and a
// YAML or JSON error are errors naming the key and the source that gave it (the file, the
// variable or the --set). It returns where each key's value came from. The config is not
// resolved or validated (Resolved, Validate).
func Load(s Sources) (Config, Origins, error) {
	l := &loader{cfg: Default(), where: s.Where, setBy: map[string]int{}, given: map[string]string{}, sweep: &sweepBlock{}}
	l.json = s.JSON
	if s.Base != nil {
		l.cfg = *s.Base
	} else if err := l.file(s.File, s.JSON); err != nil {
		return Config{}, nil, err
	}
	l.source = fromEnv
	if err := l.env(s.Env); err != nil {
		return Config{}, nil, err
	}
	l.source = fromSet
	for _, set := range s.Sets {
		if err := l.set(set); err != nil {
			return Config{}, nil, err
		}
	}
	return l.finish(s.Sets)
}

// fileError names the file in an error about one of its values.
func (l *loader) fileError(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if l.where == "" {
		return errors.New(msg)
	}
	return fmt.Errorf("config (%s): %s", l.where, msg)
}

// file applies the config file src (YAML, or a run's config.json).
func (l *loader) file(src []byte, isJSON bool) error {
	tree, sweep, err := parseFile(src, isJSON)
	if err != nil {
		if l.where == "" {
			return err
		}
		return fmt.Errorf("%s: %w", l.where, err)
	}
	if len(tree) == 0 && sweep == nil {
		return fmt.Errorf("%s sets no key; write the keys to change (configs/ has examples), or run without -c for the demo", l.where)
	}
	leaves := map[string]any{}
	if err := flattenFile(tree, "", leaves); err != nil {
		return l.fileError("%v", err)
	}
	for _, key := range slices.Sorted(maps.Keys(leaves)) {
		x, problem := typedValue(keyTypes()[key], leaves[key], !isJSON)
		if problem != "" {
			return l.fileError("%s: %s", key, problem)
		}
		if err := l.put(key, x); err != nil {
			return l.fileError("%v", err)
		}
		if entries, ok := x.([]any); ok && key == "suite" {
			for _, e := range entries {
				l.fileSuite = append(l.fileSuite, fmt.Sprint(e))
			}
		}
	}
	if sweep != nil {
		if err := l.sweep.fromFile(sweep); err != nil {
			return l.fileError("%v", err)
		}
		l.sweep.where = "config (" + l.where + ")"
	}
	return nil
}

// parseFile reads a config file into its keys (lower-cased, as the keys are written) and
// its sweep block, kept apart: its keys are dotted config keys, and their order (the first
// is the figures' x axis) matters. A JSON file's numbers keep their digits (a seed beyond
// 2^53); anything after the JSON object is an error.
func parseFile(src []byte, isJSON bool) (map[string]any, any, error) {
	var tree map[string]any
	if isJSON {
		dec := json.NewDecoder(bytes.NewReader(src))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			return nil, nil, err
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, nil, fmt.Errorf("data after the config object")
		}
	} else {
		var doc yaml.Node
		if err := yaml.Unmarshal(src, &doc); err != nil {
			return nil, nil, err
		}
		if len(doc.Content) == 0 {
			return nil, nil, nil
		}
		if err := doc.Content[0].Decode(&tree); err != nil {
			return nil, nil, err
		}
		tree = lowerKeys(tree)
		if _, ok := tree["sweep"]; ok {
			sweep := orderedSweep(doc.Content[0])
			delete(tree, "sweep")
			return tree, sweep, nil
		}
	}
	sweep, ok := tree["sweep"]
	delete(tree, "sweep")
	if !ok {
		sweep = nil
	}
	return tree, sweep, nil
}

// lowerKeys is m with every key, in every section, in lower case.
func lowerKeys(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = lowerKeys(sub)
		}
		out[strings.ToLower(k)] = v
	}
	return out
}

// flattenFile collects the keys of a file's tree (sections nested, or written dotted) with
// their values in leaves; a key Config does not have is an error naming the keys closest
// to it, a section given one value an error naming its keys. A section given no value
// (train:) sets nothing.
func flattenFile(tree map[string]any, prefix string, leaves map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(tree)) {
		v := tree[k]
		key := prefix + k
		sub, isMap := v.(map[string]any)
		switch {
		case IsKey(key):
			leaves[key] = v
		case isSection(key) && isMap:
			if err := flattenFile(sub, key+".", leaves); err != nil {
				return err
			}
		case isSection(key) && v == nil:
		case isSection(key):
			return fmt.Errorf("%s is a section (%s); write its keys under it", key, strings.Join(keysUnder(key), ", "))
		default:
			// a misspelt section: name a whole key under it, which a suggestion can match
			for isMap && len(sub) > 0 {
				k := slices.Sorted(maps.Keys(sub))[0]
				key += "." + k
				sub, isMap = sub[k].(map[string]any)
			}
			return fmt.Errorf("%s", unknownKey(key))
		}
	}
	return nil
}

// put sets key to x (typedValue's) for the source being applied.
func (l *loader) put(key string, x any) error {
	l.setBy[key] = l.source
	if l.source == fromEnv {
		l.given[key] = "environment variable " + EnvName(key)
	}
	return l.cfg.set(key, x)
}

// set applies one --set key=value.
func (l *loader) set(s string) error {
	key, val, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("--set %q: want key=value, e.g. train.rounds=10", s)
	}
	key = strings.ToLower(key) // as a file's keys are
	if key == "sweep" || strings.HasPrefix(key, "sweep.") {
		l.sweep.where = "--set"
		return l.sweep.set(strings.TrimPrefix(strings.TrimPrefix(key, "sweep"), "."), parseText(val))
	}
	t, known := keyTypes()[key]
	if !known {
		return fmt.Errorf("--set %s: %s (keys are written section.key, as in configs/*.yaml)", s, unknownKey(key))
	}
	x, problem := typedValue(t, parseText(val), true)
	switch {
	case problem == noValue:
		return fmt.Errorf("--set %s: no value; write %s=<value>", s, key)
	case strings.TrimSpace(val) == "null" && t.Kind() != reflect.Pointer:
		hint := ""
		if key == "seed" {
			hint = "; to run several seeds instead, --set seeds=[1,2] replaces the file's seed"
		}
		return fmt.Errorf("--set %s: %s cannot be unset; null unsets only the optional keys (the model's sizes and plug-ins, algorithm.hyper.lr, novel.lr)%s", s, key, hint)
	case problem != "":
		return fmt.Errorf("--set %s: %s", key, problem)
	}
	if err := l.put(key, x); err != nil {
		return fmt.Errorf("--set %s: %w", s, err)
	}
	l.given[key] = "--set " + s
	return nil
}

// sourceName names a source for messages; where names the file.
func sourceName(source int, where string) string {
	switch {
	case source == fromEnv:
		return "the environment"
	case source == fromSet:
		return "--set"
	case where == "":
		return "the config"
	}
	return "config (" + where + ")"
}

// finish settles what depends on several sources (seed against seeds, a suite given later
// than the file, the sweep), refuses a value no run would use, and says where each key
// came from.
func (l *loader) finish(sets []string) (Config, Origins, error) {
	seedBy, seed := l.setBy["seed"]
	seedsBy, seeds := l.setBy["seeds"]
	cfg := l.cfg
	switch {
	case seed && seeds && seedBy == seedsBy && !(seedBy == fromFile && l.json):
		// a run's config.json writes seed beside seeds: the seeds replace it
		return Config{}, nil, fmt.Errorf("%s: seed and seeds are both set; keep seed for one run or seeds for one run per seed (a later source's seed or seeds replaces the other: --set seeds=[1,2] over a file's seed)",
			sourceName(seedBy, l.where))
	case seed && seeds && seedsBy > seedBy:
		cfg.Seed = Default().Seed // seeds given later replace the seed
	case seed && seeds && seedBy > seedsBy:
		cfg.Seeds = nil
	}
	if by, ok := l.setBy["suite"]; ok && by != fromFile {
		cfg.Suite = keepMemberSettings(cfg.Suite, l.fileSuite)
	}
	if l.sweep.given() {
		axes, err := l.sweep.read()
		if err != nil {
			if l.sweep.where == "--set" {
				return Config{}, nil, fmt.Errorf("--set %w", err)
			}
			return Config{}, nil, l.fileError("%v", err)
		}
		cfg.Sweep = axes
	}
	if err := overridden(cfg, l.given); err != nil {
		return Config{}, nil, err
	}
	origins := Origins{}
	for key, by := range l.setBy {
		origins[key] = sourceName(by, l.where)
		if g, ok := l.given[key]; ok {
			origins[key] = g
		}
	}
	if l.sweep.given() {
		origins["sweep"] = l.sweep.where
	}
	return cfg, origins, nil
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
func overridden(cfg Config, given map[string]string) error {
	for _, key := range slices.Sorted(maps.Keys(given)) {
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
			m, err := ParseMember(e)
			if err != nil {
				return nil // a malformed member: the suite's check names it
			}
			every = every && slices.ContainsFunc(m.Sets, func(kv [2]string) bool { return kv[0] == key })
		}
		if every {
			return fmt.Errorf("%s: every member of the suite sets %s (suite: %s), so this value would be ignored; pick the members with --set 'suite=[...]' (a bare name sets algorithm.name), or run without a suite: --set 'suite=[]'",
				given[key], key, strings.Join(MemberLabels(cfg.Suite), ", "))
		}
	}
	return nil
}
