package config

import (
	"strings"
	"testing"
)

// TestKeysNoRunReadsAreRefused: an algorithm key given (--set, PFL_*) for runs none of
// which reads it is refused, naming the key and who gave it; in a suite or grid a key
// given for all its runs is accepted when one of them reads it, and a key a member's
// entry or the sweep sets must be read by that run. A config file's own algorithm
// section may hold other algorithms' keys.
func TestKeysNoRunReadsAreRefused(t *testing.T) {
	mu := map[string]string{"algorithm.mu": "--set algorithm.mu=0.01"}
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		given  map[string]string
		want   string // the key the error starts with; "" for none
	}{
		{"the defaults", func(c *Config) {}, nil, ""},
		{"mu given for fedprox", func(c *Config) { c.Algorithm.Name = "fedprox" }, mu, ""},
		{"mu given for fedavg", func(c *Config) {}, mu, "algorithm.mu: --set algorithm.mu=0.01, but algorithm fedavg does not read it (only fedprox does)"},
		{"mu in the file of a fedavg run", func(c *Config) { c.Algorithm.Mu = 0.01 }, nil, ""},
		{"pfedme's key given for fedper", func(c *Config) { c.Algorithm.Name = "fedper" },
			map[string]string{"algorithm.pfedme.lambda": "environment variable PFL_ALGORITHM_PFEDME_LAMBDA"}, "algorithm.pfedme.lambda: environment variable"},
		{"local_clients given for fedper", func(c *Config) { c.Algorithm.Name = "fedper" },
			map[string]string{"algorithm.local_clients": "--set algorithm.local_clients=sampled"}, "algorithm.local_clients"},
		{"local_clients given for local", func(c *Config) { c.Algorithm.Name = "local" },
			map[string]string{"algorithm.local_clients": "--set algorithm.local_clients=sampled"}, ""},
		{"hyper's section given for fedtp", func(c *Config) { c.Algorithm.Name = "fedtp" },
			map[string]string{"algorithm.hyper.lr": "--set algorithm.hyper.lr=0.5"}, ""},
		{"a key that is not the algorithm's", func(c *Config) {}, map[string]string{"train.rounds": "--set train.rounds=3"}, ""},
		// a suite's section is shared: read by one member is enough
		{"mu given for a suite with fedprox", func(c *Config) { c.Suite = []string{"fedavg", "fedprox"} }, mu, ""},
		{"mu given for a suite without fedprox", func(c *Config) { c.Suite = []string{"fedavg", "fedper"} }, mu,
			"algorithm.mu: --set algorithm.mu=0.01, but none of the runs' algorithms (fedavg, fedper) reads it"},
		{"mu in a member that does not read it", func(c *Config) {
			c.Suite = []string{"fedprox", "avg: algorithm.name=fedavg; algorithm.mu=0.01"}
		}, nil, "algorithm.mu: suite member avg sets it, but algorithm fedavg does not read it"},
		{"mu in a member that reads it", func(c *Config) { c.Suite = []string{"fedavg", "p: algorithm.name=fedprox; algorithm.mu=0.01"} }, nil, ""},
		{"mu given for seeds of fedavg", func(c *Config) { c.Seeds = []uint64{1, 2} }, mu, "algorithm.mu"},
		{"a sweep of mu over fedavg", func(c *Config) { c.Sweep = []SweepAxis{{Key: "algorithm.mu", Values: []string{"0.1", "1"}}} }, nil,
			"algorithm.mu: sweep point algorithm.mu=0.1 sets it"},
		{"a sweep of mu over fedprox", func(c *Config) {
			c.Algorithm.Name, c.Sweep = "fedprox", []SweepAxis{{Key: "algorithm.mu", Values: []string{"0.1", "1"}}}
		}, nil, ""},
		{"mu given for a sweep of algorithms", func(c *Config) {
			c.Sweep = []SweepAxis{{Key: "algorithm.name", Values: []string{"fedavg", "fedprox"}}}
		}, mu, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			cfg.Name, cfg.Out = "k", t.TempDir()
			c.mutate(&cfg)
			err := CheckKeysRead(cfg, c.given)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
				t.Fatalf("error %v, want one starting with %q", err, c.want)
			}
		})
	}
}
