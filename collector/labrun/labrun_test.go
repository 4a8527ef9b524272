package labrun

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/collector/agent"
	"github.com/h3rum/h3rum/collector/lab"
	"github.com/h3rum/h3rum/ingest"
)

func TestWithDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{Runs: DefaultRuns, Concurrency: 1, RunTimeout: DefaultRunTimeout}},
		{"given", Config{Runs: 7, Concurrency: 3, RunTimeout: time.Second, AgentRuns: 2, FirefoxRuns: 1, Tolerance: 0.2},
			Config{Runs: 7, Concurrency: 3, RunTimeout: time.Second, AgentRuns: 2, FirefoxRuns: 1, Tolerance: 0.2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.withDefaults()
			if got.Runs != tc.want.Runs || got.Concurrency != tc.want.Concurrency || got.RunTimeout != tc.want.RunTimeout ||
				got.AgentRuns != tc.want.AgentRuns || got.FirefoxRuns != tc.want.FirefoxRuns || got.Tolerance != tc.want.Tolerance {
				t.Errorf("withDefaults() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRunRefusesNegative(t *testing.T) {
	for _, c := range []Config{{Runs: -1}, {FirefoxRuns: -1}, {AgentRuns: -1}, {Concurrency: -1}, {RunTimeout: -time.Second}, {Tolerance: -0.1}} {
		var out strings.Builder
		ok, err := c.Run(context.Background(), &out)
		if ok || err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("%+v: Run = %v, %v; want a configuration error", c, ok, err)
		}
		if out.Len() > 0 {
			t.Errorf("%+v: Run printed %q before refusing", c, out.String())
		}
	}
}

func TestRunsOf(t *testing.T) {
	own := &lab.RegionLink{Region: lab.Region{Name: "own", Runs: 25}}
	plain := &lab.RegionLink{Region: lab.Region{Name: "plain"}}
	chromium, firefox := engine{name: "chromium"}, engine{name: "firefox"}
	for _, tc := range []struct {
		r    *lab.RegionLink
		e    engine
		want int
	}{
		{own, chromium, 25},
		{own, firefox, 10},
		{plain, chromium, 10},
		{plain, firefox, 10},
	} {
		if got := runsOf(tc.r, tc.e, 10); got != tc.want {
			t.Errorf("runsOf(%s, %s, 10) = %d, want %d", tc.r.Name, tc.e.name, got, tc.want)
		}
	}
}

func TestAgentTimeout(t *testing.T) {
	for _, tc := range []struct {
		r    lab.Region
		want time.Duration
	}{
		{lab.Region{Name: "open"}, agent.DefaultTimeout},
		{lab.Region{Name: "blocked", BlockUDP: true}, 3 * time.Second},
	} {
		if got := agentTimeout(tc.r); got != tc.want {
			t.Errorf("agentTimeout(%s) = %s, want %s", tc.r.Name, got, tc.want)
		}
	}
}

func TestPct(t *testing.T) {
	for _, tc := range []struct {
		n, of uint64
		want  float64
	}{{0, 0, 0}, {5, 0, 0}, {0, 10, 0}, {1, 4, 25}, {10, 10, 100}} {
		if got := pct(tc.n, tc.of); got != tc.want {
			t.Errorf("pct(%d, %d) = %v, want %v", tc.n, tc.of, got, tc.want)
		}
	}
}

func TestTailString(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"one", 3, "one"},
		{"a\nb\nc\nd\n", 2, "c\nd"},
		{"\n\na\nb\n\n", 3, "a\nb"},
		{"a\nb", 0, ""},
	} {
		if got := tailString(tc.s, tc.n); got != tc.want {
			t.Errorf("tailString(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestPacketLine(t *testing.T) {
	st := lab.Stats{In: 1000, UDPIn: 600, Lost: 30, UDPLost: 18, Bursts: 10, LongestBurst: 4, QueueFull: 2, Blocked: 1}
	for _, tc := range []struct {
		p    lab.Path
		want string
	}{
		{lab.Path{LossPct: 3, LossBurst: 3},
			"  lossy        up   udp lost 18/600 (3.00 %), tcp lost 12/400 (3.00 %); 10 runs of losses, mean 3.00 (configured 3 % in runs of 3.0), longest 4; queue full 2, blocked 1"},
		{lab.Path{LossPct: 3},
			"  lossy        up   udp lost 18/600 (3.00 %), tcp lost 12/400 (3.00 %); 10 runs of losses, mean 3.00 (configured 3 % in runs of 1.0), longest 4; queue full 2, blocked 1"},
		// A share under 1 % is printed as configured, not rounded to 0.
		{lab.Path{LossPct: 0.1},
			"  lossy        up   udp lost 18/600 (3.00 %), tcp lost 12/400 (3.00 %); 10 runs of losses, mean 3.00 (configured 0.1 % in runs of 1.0), longest 4; queue full 2, blocked 1"},
	} {
		if got := packetLine("lossy", "up", tc.p, st); got != tc.want {
			t.Errorf("packetLine:\n got %q\nwant %q", got, tc.want)
		}
	}
}

// TestWriteGeoIP reads the lab's database back through the collector's
// own GeoIP path.
func TestWriteGeoIP(t *testing.T) {
	regions := []*lab.RegionLink{
		{Region: lab.Region{Name: "zero", Country: "US", Continent: "NA"}, Prefix: netip.MustParsePrefix("198.18.1.0/24")},
		{Region: lab.Region{Name: "near", Country: "DE", Continent: "EU"}, Prefix: netip.MustParsePrefix("198.18.2.0/24")},
	}
	path := filepath.Join(t.TempDir(), "lab-geoip.mmdb")
	if err := writeGeoIP(path, regions); err != nil {
		t.Fatal(err)
	}
	g, err := ingest.OpenGeoIP(path, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	for _, tc := range []struct {
		addr               string
		country, continent string
	}{
		{"198.18.1.2", "US", "NA"},
		{"198.18.1.255", "US", "NA"},
		{"198.18.2.2", "DE", "EU"},
		{"198.18.3.2", "", ""},
		{"198.18.0.1", "", ""},
	} {
		geo := g.Lookup(netip.MustParseAddr(tc.addr))
		if geo.Country != tc.country || geo.Continent != tc.continent {
			t.Errorf("%s: country %q continent %q, want %q %q", tc.addr, geo.Country, geo.Continent, tc.country, tc.continent)
		}
	}
}

func TestWriteGeoIPError(t *testing.T) {
	err := writeGeoIP(filepath.Join(t.TempDir(), "missing", "lab-geoip.mmdb"), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "lab GeoIP: ") {
		t.Errorf("writeGeoIP into a missing directory: %v, want a lab GeoIP error", err)
	}
}
