package dist

import (
	"strings"
	"testing"
	"time"

	"pfl/cuda"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestFromEnv(t *testing.T) {
	full := map[string]string{EnvWorldSize: "4", EnvRank: "3", EnvLocalRank: "1", EnvMasterAddr: "10.0.0.1", EnvMasterPort: "29500"}
	e, err := parse(env(full))
	if err != nil || e == nil || e.Rank != 3 || e.World != 4 || e.LocalRank != 1 || e.Addr != "10.0.0.1" || e.Port != 29500 || e.Timeout != DefaultTimeout {
		t.Fatalf("full environment: %+v %v", e, err)
	}
	if d := e.Device(cuda.CUDA(0)); d != cuda.CUDA(1) {
		t.Errorf("rank with LOCAL_RANK 1 on CUDA: device %v, want cuda:1", d)
	}
	if d := e.Device(cuda.CPU); d != cuda.CPU {
		t.Errorf("rank on the CPU: device %v", d)
	}
	for _, kv := range []map[string]string{{}, {EnvWorldSize: "1", EnvRank: "0"}} {
		if e, err := parse(env(kv)); e != nil || err != nil {
			t.Errorf("%v: %+v %v, want one process", kv, e, err)
		}
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range full {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct{ key, value string }{
		{EnvWorldSize, "two"}, {EnvWorldSize, "0"}, {EnvRank, ""}, {EnvRank, "4"}, {EnvRank, "-1"},
		{EnvLocalRank, "x"}, {EnvMasterAddr, ""}, {EnvMasterPort, ""}, {EnvMasterPort, "70000"},
		{EnvTimeout, "5"}, {EnvTimeout, "-1s"},
	} {
		_, err := parse(env(with(c.key, c.value)))
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s=%q: %v, want an error naming %s", c.key, c.value, err, c.key)
		}
	}
	e, err = parse(env(with(EnvTimeout, "90s")))
	if err != nil || e.Timeout != 90*time.Second {
		t.Errorf("PFL_DIST_TIMEOUT=90s: %+v %v", e, err)
	}
}
