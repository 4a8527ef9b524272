package storetest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/h3rum/h3rum/ingest/store/chdb"
)

// ChdbEnv names the environment variable that gives the path of the
// chdb library (libchdb.so, ClickHouse 26.x; make chdb fetches it), which
// the Chdb engine runs.
const ChdbEnv = "H3RUM_TEST_CHDB"

// skipManaged skips t when the shared engine is Chdb: the library's
// listener aborts on a failed login (or any error that escapes a
// connection's handler), has no users or passwords, and is not supervised,
// so tests of those run on Managed.
func skipManaged(t testing.TB, why string) {
	t.Helper()
	if Shared() == Chdb {
		t.Skipf("needs a managed ClickHouse server (%s); runs with %s unset", why, EngineEnv)
	}
}

// startChdb starts the 26.x server (package chdb) of the library at lib,
// its sessions' defaults the settings the pipeline pins (FlippedDefaults):
// the test binary run again, which Main serves.
func startChdb(ctx context.Context, lib string) (*chdb.Server, error) {
	if !servers.inMain {
		return nil, errors.New("the 26.x server runs from storetest.Main: use it as the package's TestMain")
	}
	if lib == "" {
		return nil, errors.New(ChdbEnv + " is not set")
	}
	if _, err := os.Stat(lib); err != nil {
		return nil, err
	}
	return chdb.Start(ctx, lib, FlippedDefaults(Chdb))
}
