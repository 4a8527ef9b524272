package layers

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/h3rum/h3rum/"

// rank orders the packages on the data path, script → ingest → store →
// the report's model → its options as parameters → its queries → running
// them → its HTTP → the collector that wires them: a package imports only
// packages of a lower rank. beacon, the wire format, is below every room.
// The outputs share the rank of the queries' preparation, so that they
// draw the model and never prepare or run its SQL.
var rank = map[string]int{
	"beacon":               0,
	"ingest/access":        1,
	"ingest/nel":           1,
	"ingest/spool":         1,
	"ingest/store/sqltext": 1,
	"ingest/store/local":   2,
	"collector/origin":     2,
	"ingest/store":         3,
	"ingest":               4,
	"queries/stats":        1,
	"queries/model":        4,
	"collector/agent":      4,
	"queries/params":       5,
	"collector/lab":        5,
	"queries/query":        6,
	"queries/render":       6,
	"queries":              7,
	"queries/api":          8,
	"collector/serve":      9,
	"collector/labrun":     10,
	"collector/cmd":        11, // every binary
}

// support is test and build support: imported by tests, benchmarks and
// the lab, never by a room of the data path.
var support = []string{
	"beacon/beacontest", "beacon/chromium", "beacon/firefox", "beacon/webkit", "beacon/internal/",
	"collector/agent/agenttest", "collector/internal/", "ingest/store/chdb", "ingest/store/storetest",
	"queries/synth", "queries/render/internal/",
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
	sc := bufio.NewScanner(bytes.NewReader(goList(t)))
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

// goList is every package of the module, a line each: its import path,
// then its imports. The module is listed once for the tests that read it.
var goList = func() func(t *testing.T) []byte {
	var (
		once sync.Once
		out  []byte
		err  error
	)
	return func(t *testing.T) []byte {
		t.Helper()
		once.Do(func() {
			out, err = exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
		})
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		return out
	}
}()

// pure are rooms that compute on plain data, with what none of their
// dependencies, direct or not, may be: a database driver, the network or
// the package that serves them, so that they can be tested on slices and
// used without a server.
var pure = map[string][]string{
	"queries/stats": {"database/", "net", "github.com/ClickHouse/", module + "queries", module + "ingest/"},
}

// TestPureRooms checks pure's rooms against every package they depend on.
func TestPureRooms(t *testing.T) {
	for pkg, banned := range pure {
		out, err := exec.Command("go", "list", "-f", "{{join .Deps \"\\n\"}}", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range banned {
				if dep == b || strings.HasPrefix(dep, strings.TrimSuffix(b, "/")+"/") {
					t.Errorf("%s depends on %s: it must not depend on %s", pkg, dep, b)
				}
			}
		}
	}
}

func isSupport(pkg string) bool {
	_, room := rankOf(pkg)
	return !room
}

// TestArchitectureNamesImports holds ARCHITECTURE.md's package list to
// the imports `go list` shows: each room's "→" names exactly the
// product's packages it imports (its own internal packages aside), and a
// room without one imports none.
func TestArchitectureNamesImports(t *testing.T) {
	doc, err := os.ReadFile("../../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(doc), "## Packages\n\n```\n")
	list, _, ok2 := strings.Cut(list, "```")
	if !ok || !ok2 {
		t.Fatal("ARCHITECTURE.md has no code block under ## Packages")
	}
	stated := map[string][]string{}
	var pkg string
	for line := range strings.Lines(list) {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(line, " ") {
			if pkg = f[0]; strings.HasPrefix(pkg, "collector/cmd/") {
				pkg = "" // the binaries import what they wire
				continue
			}
			if _, room := rankOf(pkg); !room {
				t.Errorf("ARCHITECTURE.md lists %s, which is no room of the data path", pkg)
			}
			stated[pkg] = []string{}
		}
		if _, deps, ok := strings.Cut(line, "→"); ok && pkg != "" {
			for _, d := range strings.Split(deps, ",") {
				stated[pkg] = append(stated[pkg], strings.TrimSpace(d))
			}
		}
	}
	listed := map[string][]string{}
	for line := range strings.Lines(string(goList(t))) {
		f := strings.Fields(line)
		listed[strings.TrimPrefix(f[0], module)] = f[1:]
	}
	for pkg, deps := range stated {
		var imports []string
		for _, imp := range listed[pkg] {
			if dep, ok := strings.CutPrefix(imp, module); ok && !strings.HasPrefix(dep, pkg+"/internal/") {
				imports = append(imports, dep)
			}
		}
		slices.Sort(deps)
		if !slices.Equal(deps, imports) {
			t.Errorf("ARCHITECTURE.md: %s → %s; it imports %s", pkg, strings.Join(deps, ", "), strings.Join(imports, ", "))
		}
	}
	for pkg := range rank {
		if _, ok := stated[pkg]; !ok && pkg != "collector/cmd" {
			t.Errorf("ARCHITECTURE.md's package list has no line for %s", pkg)
		}
	}
}

// TestArchitectureNamesFiles fails when ARCHITECTURE.md names a file (in
// backquotes, with its extension) that the tree no longer has: as a path
// from the root or the end of one (`sql/runs.sql`), a pattern matching at
// least one (`designs*.sql`).
func TestArchitectureNamesFiles(t *testing.T) {
	const root = "../../.."
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "var") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile("`([A-Za-z0-9_./*-]+\\.(?:go|sql|js|mjs|md|json))`").FindAllStringSubmatch(string(doc), -1)
	if len(names) < 50 {
		t.Fatalf("ARCHITECTURE.md names %d files; the pattern no longer matches the text", len(names))
	}
	for _, m := range names {
		name := m[1]
		if !slices.ContainsFunc(files, func(f string) bool {
			for tail := f; ; {
				if ok, _ := path.Match(name, tail); ok {
					return true
				}
				_, rest, more := strings.Cut(tail, "/")
				if !more {
					return false
				}
				tail = rest
			}
		}) {
			t.Errorf("ARCHITECTURE.md names %s, which no file of the tree is", name)
		}
	}
}
