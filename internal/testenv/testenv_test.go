package testenv

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skipf and Fatalf instead of stopping.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestRequireData(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	for _, c := range []struct {
		env, path   string
		skip, fatal bool
	}{
		{"", missing, true, false},
		{"0", missing, true, false},
		{"1", missing, false, true},
		{"1", t.TempDir(), false, false},
		{"", t.TempDir(), false, false},
	} {
		t.Setenv(RequireDataEnv, c.env)
		r := &recorder{}
		RequireData(r, c.path, "install it")
		if (r.skipped != "") != c.skip || (r.failed != "") != c.fatal {
			t.Errorf("%s=%q, path %s: skipped %q, failed %q; want skip %v, fail %v", RequireDataEnv, c.env, c.path, r.skipped, r.failed, c.skip, c.fatal)
		}
		if r.failed != "" && !strings.Contains(r.failed, RequireDataEnv) {
			t.Errorf("the failure does not name %s: %q", RequireDataEnv, r.failed)
		}
	}
}
