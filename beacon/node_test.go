package beacon

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestNodeUnit runs the JavaScript unit tests (test/*.test.mjs) with Node's
// built-in runner, so go test covers the script's pure parts too.
func TestNodeUnit(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not found on $PATH: install Node.js 20+ (apt-get install nodejs) to run the beacon's JS tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--test", "test/").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test test/: %v\n%s", err, out)
	}
	t.Logf("node --test test/: passed")
}
