package dist

import (
	"net"
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

// TestGlooNetwork checks where a rank's Gloo device sits: the interfaces GLOO_SOCKET_IFNAME
// names (each must exist, an error naming the variable otherwise), and without it the
// address that routes to MASTER_ADDR, loopback for a loopback MASTER_ADDR.
func TestGlooNetwork(t *testing.T) {
	base := map[string]string{EnvWorldSize: "2", EnvRank: "1", EnvMasterAddr: "127.0.0.1", EnvMasterPort: "29500"}
	e, err := parse(env(base))
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.Gloo()
	if err != nil || len(n.Interfaces) != 0 || n.Local != "127.0.0.1" || !strings.Contains(n.String(), "routes to MASTER_ADDR 127.0.0.1") {
		t.Errorf("loopback MASTER_ADDR: %+v (%v) %v, want 127.0.0.1", n, n, err)
	}
	lo := loopbackName(t)
	with := func(v string) map[string]string {
		m := map[string]string{EnvGlooIfname: v}
		for k, x := range base {
			m[k] = x
		}
		return m
	}
	if e, err = parse(env(with(lo + ", " + lo))); err != nil {
		t.Fatal(err)
	}
	n, err = e.Gloo()
	if err != nil || len(n.Interfaces) != 2 || n.Interfaces[0] != lo || n.Interfaces[1] != lo || n.Local != "" {
		t.Errorf("GLOO_SOCKET_IFNAME=%s,%s: %+v %v", lo, lo, n, err)
	}
	if e, err = parse(env(with("pflnosuch0"))); err != nil {
		t.Fatal(err)
	}
	if _, err = e.Gloo(); err == nil || !strings.Contains(err.Error(), EnvGlooIfname) || !strings.Contains(err.Error(), `"pflnosuch0"`) {
		t.Errorf("an interface that does not exist: %v", err)
	}
	if _, err = parse(env(with(lo + ",,"))); err == nil || !strings.Contains(err.Error(), EnvGlooIfname) {
		t.Errorf("an empty name in GLOO_SOCKET_IFNAME: %v", err)
	}
}

// loopbackName is the name of this machine's loopback interface ("lo" on Linux).
func loopbackName(t *testing.T) string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ifs {
		if f.Flags&net.FlagLoopback != 0 {
			return f.Name
		}
	}
	t.Skip("no loopback interface")
	return ""
}
