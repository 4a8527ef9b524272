package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchtable(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bench.txt")
	if err := os.WriteFile(in, []byte(`goos: linux
some table line that is not a result
BenchmarkProbe/keepalive/h3rum-vs-bare	1	0.93 req/s-ratio	1.02 cpu/req-ratio
BenchmarkProbeUnderIngest-2   	       1	3961799492 ns/op	       139.1 beacons/s	         7.534 p99-ratio
PASS
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bench.json")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-json", out, in}, &stdout, &stderr); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rs []Result
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Name != "Probe/keepalive/h3rum-vs-bare" || rs[0].Values["req/s-ratio"] != 0.93 ||
		rs[1].Values["p99-ratio"] != 7.534 || math.Abs(rs[1].Values["sec/op"]-3.961799492) > 1e-9 {
		t.Errorf("results %+v", rs)
	}
	// Ratios lead each result's rows.
	lines := strings.Split(stdout.String(), "\n")
	if len(lines) < 4 || !strings.Contains(lines[1], "ratio") || !strings.Contains(lines[2], "ratio") || !strings.Contains(lines[3], "p99-ratio") {
		t.Errorf("table:\n%s", stdout.String())
	}
	if err := run([]string{filepath.Join(dir, "missing.txt")}, &stdout, &stderr); err == nil {
		t.Error("a missing file is not an error")
	}
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("no results\n"), 0o644)
	if err := run([]string{empty}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "no benchmark results") {
		t.Errorf("a file without results: %v", err)
	}
}
