package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/firefox"
)

// TestLab runs a small lab with the real binary: a zero-delay region that
// calibrates, a 50 ms region, and one whose UDP is blocked, seven headless
// Chromium visits each through the path emulator, the collector with its
// own ClickHouse in the collector's namespace, and the report. Every
// region's self-check must pass: the warm medians of both protocols match
// the injected round trip plus the calibrated overhead, HTTP/3 is used
// wherever UDP passes and nowhere it is blocked; three agent runs per
// region, whose handshakes on the 50 ms path take 2 (QUIC), 1 (0-RTT) and
// 3 (TCP + TLS) round trips; two Firefox visits per region, on HTTP/3
// wherever UDP passes and nowhere it is blocked.
func TestLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the lab needs root (network namespaces, TUN devices): not run")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("the lab needs /dev/net/tun: %v: not run", err)
	}
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	regions := filepath.Join(dir, "regions.json")
	if err := os.WriteFile(regions, []byte(`{"regions": [
 {"name": "zero", "country": "US", "continent": "NA", "up": {"delay_ms": 0}, "down": {"delay_ms": 0}},
 {"name": "near", "country": "DE", "continent": "EU", "up": {"delay_ms": 25}, "down": {"delay_ms": 25}},
 {"name": "blocked", "country": "ZA", "continent": "AF", "up": {"delay_ms": 10}, "down": {"delay_ms": 10}, "block_udp": true}
]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "lab", "--regions", regions, "--runs", "7", "--agent-runs", "3", "--firefox-runs", "2", "--data-dir", filepath.Join(dir, "lab"))
	out, err := cmd.CombinedOutput()
	t.Logf("h3rum lab:\n%s", out)
	if err != nil {
		t.Fatalf("h3rum lab: %v", err)
	}
	for _, region := range []string{"zero", "near", "blocked"} {
		if !strings.Contains(string(out), fmt.Sprintf("  %-12s PASS", region)) {
			t.Errorf("region %s has no passing verdict", region)
		}
	}
	wants := []string{"calibration: region zero", "h2 p50", "h3 p50", "UDP blocked: HTTP/3 availability 0 %",
		"agent h3 full", "agent h3 0rtt", "agent h2 full", "agent HTTP/3 availability 0 % (want 0) ok"}
	if _, err := firefox.Find(""); err != nil {
		t.Logf("FIREFOX PART NOT RUN: %v", err)
	} else {
		wants = append(wants, "firefox UDP blocked: HTTP/3 availability 0 % (want 0) ok", "firefox HTTP/3 availability 100 % ok", "the visits by browser")
	}
	for _, want := range wants {
		if !strings.Contains(string(out), want) {
			t.Errorf("lab output lacks %q", want)
		}
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err != nil || strings.Contains(string(out), "h3lab-") {
		t.Errorf("namespaces left behind: %s %v", out, err)
	}
}
