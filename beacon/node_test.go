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
// given to them as globals first. The reports the tests build from
// hostile Resource Timing entries must all decode: the script never sends
// what the collector refuses.
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
	reports := filepath.Join(t.TempDir(), "reports.jsonl")
	cmd := exec.CommandContext(ctx, node, "--import", imp, "--test", "test/")
	cmd.Env = append(os.Environ(), "H3RUM_REPORTS="+reports)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test test/: %v\n%s", err, out)
	}
	t.Logf("node --test test/: passed")
	b, err := os.ReadFile(reports)
	if err != nil {
		t.Fatalf("the node tests wrote no reports built from hostile entries: %v", err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 1000 {
		t.Fatalf("%d reports built from hostile entries, want at least 1000", len(lines))
	}
	for i, l := range lines {
		if _, err := Decode([]byte(l)); err != nil {
			t.Fatalf("report %d of %d the script built from a hostile entry is refused: %v\n%s", i+1, len(lines), err, l)
		}
	}
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
