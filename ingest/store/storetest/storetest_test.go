package storetest

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestEngine: the shared server is the engine EngineEnv selects (a current
// ClickHouse with it, Debian's 18.16 without), so that a run meant for 26.x
// cannot pass on clickhouse-server unnoticed.
func TestEngine(t *testing.T) {
	var version string
	if err := DB(t).QueryRow(context.Background(), "SELECT version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	t.Logf("ClickHouse %s", version)
	major, _, _ := strings.Cut(version, ".")
	if current := major >= "24" && len(major) == 2; current != (Shared() == Chdb) {
		t.Errorf("version() = %s with %s=%q", version, EngineEnv, os.Getenv(EngineEnv))
	}
}
