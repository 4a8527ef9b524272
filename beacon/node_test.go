package beacon

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNodeUnit runs the JavaScript unit tests (test/*.test.mjs) with Node's
// built-in runner, so go test covers the script's pure parts too. The
// sources run as written, so the build's constants (ScriptDefine) are
// given to them as globals first.
func TestNodeUnit(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not found on $PATH: install Node.js 20+ (apt-get install nodejs) to run the beacon's JS tests")
	}
	setup := filepath.Join(t.TempDir(), "define.mjs")
	if err := os.WriteFile(setup, []byte(nodeGlobals(ScriptDefine())), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	imp := (&url.URL{Scheme: "file", Path: setup}).String()
	out, err := exec.CommandContext(ctx, node, "--import", imp, "--test", "test/").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test test/: %v\n%s", err, out)
	}
	t.Logf("node --test test/: passed")
}

// nodeGlobals is a module that sets each of define's identifiers on
// globalThis to its value (a JSON literal, so also JavaScript).
func nodeGlobals(define map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(define)) {
		fmt.Fprintf(&b, "globalThis.%s = %s;\n", k, define[k])
	}
	return b.String()
}
