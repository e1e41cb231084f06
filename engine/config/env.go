package config

import (
	"fmt"
	"slices"
	"strings"

	"pfl/cuda"
	"pfl/engine/data/fetch"
	"pfl/engine/dist"
	"pfl/internal/suggest"
)

// EnvName is the environment variable of a key: train.eval_every is PFL_TRAIN_EVAL_EVERY.
func EnvName(key string) string {
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

// OwnVariables lists the PFL_* environment variables that pfl, its native library, its
// tests and its scripts read for purposes of their own (every other PFL_* variable names
// a config key).
func OwnVariables() []string { return slices.Clone(ownVariables) }

// ownPrefix starts the variables of pfl's command tests (PFL_TEST_AS_PFL, which makes a
// test binary act as pfl, and the PFL_TEST_CHILD_* of its child processes).
const ownPrefix = "PFL_TEST_"

// env sets every key whose PFL_* variable is in env (whether or not the file names the
// key), read as --set reads a value. A PFL_ variable that names no key and is not one of
// ownVariables is an error, as is a bad value, naming the variable.
func (l *loader) env(env []string) error {
	keys := Keys()
	byEnv := map[string]string{}
	for _, k := range keys {
		byEnv[EnvName(k)] = k
	}
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "PFL_") || slices.Contains(ownVariables, name) || strings.HasPrefix(name, ownPrefix) {
			continue
		}
		key, ok := byEnv[name]
		if !ok {
			return unknownVariable(name, keys, byEnv)
		}
		x, problem := typedValue(keyTypes()[key], parseText(val), true)
		if problem == noValue {
			return fmt.Errorf("environment variable %s (%s) is empty; give it a value or unset it", name, key)
		}
		if problem != "" {
			return fmt.Errorf("environment variable %s (%s): %s", name, key, problem)
		}
		if err := l.put(key, x); err != nil {
			return fmt.Errorf("environment variable %s (%s): %w", name, key, err)
		}
	}
	return nil
}

// unknownVariable is the error of a PFL_ variable that names no key: the keys of the
// section it names, or else the variables pfl reads otherwise; with the closest names.
func unknownVariable(name string, keys []string, byEnv map[string]string) error {
	mean := suggest.DidYouMean(name, slices.Sorted(func(yield func(string) bool) {
		for n := range byEnv {
			if !yield(n) {
				return
			}
		}
	}))
	for _, k := range keys {
		sec, _, ok := strings.Cut(k, ".")
		if !ok || !strings.HasPrefix(name, EnvName(sec)+"_") {
			continue
		}
		var names []string
		for _, k := range keysUnder(sec) {
			names = append(names, EnvName(k))
		}
		return fmt.Errorf("environment variable %s names no config key%s (%s_* keys: %s)", name, mean, EnvName(sec), strings.Join(names, ", "))
	}
	return fmt.Errorf("environment variable %s names no config key%s (PFL_<KEY> sets a key: PFL_TRAIN_ROUNDS sets train.rounds) and is none of the variables pfl reads otherwise (%s); unset it",
		name, mean, strings.Join(ownVariables, ", "))
}
