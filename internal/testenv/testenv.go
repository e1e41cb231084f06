// Package testenv holds what tests share about their environment: whether data that lives
// outside the repository (a dataset installed by the system's package manager) must be
// present.
package testenv

import (
	"os"
	"testing"
)

// RequireDataEnv names the environment variable that makes missing test data a failure:
// with PFL_REQUIRE_TEST_DATA=1 (scripts/test.sh sets it, having installed the data) a test
// that needs data fails instead of skipping, so a broken installation cannot pass unseen.
const RequireDataEnv = "PFL_REQUIRE_TEST_DATA"

// RequireData skips t when path does not exist, or fails it when RequireDataEnv is "1".
// install tells how to get the data (e.g. "apt-get install dataset-fashion-mnist").
func RequireData(t testing.TB, path, install string) {
	t.Helper()
	_, err := os.Stat(path)
	if err == nil {
		return
	}
	if os.Getenv(RequireDataEnv) == "1" {
		t.Fatalf("test data missing: %v (%s=1 requires it; %s)", err, RequireDataEnv, install)
		return
	}
	t.Skipf("test data %s not installed (%s); %s=1 makes this a failure", path, install, RequireDataEnv)
}
