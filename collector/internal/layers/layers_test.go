package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/h3rum/h3rum/"

// rank orders the packages on the data path, script → ingest → store →
// queries → the collector that wires them: a package imports only
// packages of a lower rank. beacon, the wire format, is below every room.
var rank = map[string]int{
	"beacon":             0,
	"ingest/access":      1,
	"ingest/nel":         1,
	"ingest/spool":       1,
	"ingest/store/local": 2,
	"collector/origin":   2,
	"ingest/store":       3,
	"ingest":             4,
	"queries":            4,
	"collector/agent":    4,
	"collector/lab":      5,
	"collector/serve":    6,
	"collector/labrun":   7,
	"collector/cmd":      8, // every binary
}

// support is test and build support: imported by tests, benchmarks and
// the lab, never by a room of the data path.
var support = []string{
	"beacon/beacontest", "beacon/chromium", "beacon/firefox", "beacon/webkit", "beacon/internal/",
	"collector/agent/agenttest", "collector/internal/", "ingest/store/chdb", "ingest/store/storetest",
	"queries/synth", "queries/internal/",
}

// rankOf is the rank of pkg (a path inside the module), or false for
// test and build support.
func rankOf(pkg string) (int, bool) {
	for _, s := range support {
		if pkg == strings.TrimSuffix(s, "/") || (strings.HasSuffix(s, "/") && strings.HasPrefix(pkg, s)) {
			return 0, false
		}
	}
	if strings.HasPrefix(pkg, "collector/cmd/") {
		return rank["collector/cmd"], true
	}
	r, ok := rank[pkg]
	return r, ok
}

// TestLayers lists every package of the module with `go list` and checks
// each import of the product's own packages: a room of the data path
// imports only rooms of a lower rank, its own internal packages and no
// test support; a binary and the lab run may use support packages
// (benchreport times reports on synthetic data, the lab drives the test
// browsers); a
// package the table does not know fails, so that a new one is placed.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	seen := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(f[0], module)
		r, room := rankOf(pkg)
		if !room {
			if _, known := rank[pkg]; !known && !isSupport(pkg) {
				t.Errorf("%s is in no layer: add it to rank or support", pkg)
			}
			continue
		}
		seen++
		for _, imp := range f[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if strings.HasPrefix(dep, pkg+"/internal/") {
				continue // a room's own internals (beacon's precompressed assets)
			}
			d, depRoom := rankOf(dep)
			switch {
			case !depRoom && pkg != "collector/labrun" && !strings.HasPrefix(pkg, "collector/cmd/"):
				t.Errorf("%s imports the test support %s", pkg, dep)
			case depRoom && d >= r:
				t.Errorf("%s (rank %d) imports %s (rank %d): a room imports only rooms below it", pkg, r, dep, d)
			}
		}
	}
	if seen < len(rank) {
		t.Errorf("go list showed %d rooms, want at least %d", seen, len(rank))
	}
}

func isSupport(pkg string) bool {
	_, room := rankOf(pkg)
	return !room
}
