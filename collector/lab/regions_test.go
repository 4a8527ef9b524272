package lab

import (
	"strings"
	"testing"
)

// defaultRegions is the lab's default regions file, seen from this directory.
const defaultRegions = "../../deploy/lab/regions.json"

func TestDefaultRegions(t *testing.T) {
	regions, err := LoadRegions(defaultRegions)
	if err != nil {
		t.Fatal(err)
	}
	var control, blocked, lossy, far int
	continents := map[string]string{}
	for _, r := range regions {
		t.Log(r)
		switch {
		case r.BlockUDP:
			blocked++
		case r.Up.LossPct == 0 && r.Down.LossPct == 0 && r.Up.JitterMS == 0 && r.Down.JitterMS == 0:
			control++
		}
		if r.Up.LossPct >= 2 || r.Down.LossPct >= 2 {
			lossy++
		}
		if r.Up.DelayMS+r.Down.DelayMS >= 200 {
			far++
		}
		// The report groups by continent: two regions on one would merge.
		if other, ok := continents[r.Continent]; ok {
			t.Errorf("%s and %s are both on %s", r.Name, other, r.Continent)
		}
		continents[r.Continent] = r.Name
	}
	if len(regions) < 5 || control < 1 || blocked < 1 || lossy < 1 || far < 1 {
		t.Errorf("want ≥ 5 regions with a lossless control, a far one, a lossy one and a UDP-blocked one; got %d regions, %d control, %d far, %d lossy, %d blocked",
			len(regions), control, far, lossy, blocked)
	}
}

func TestParseRegions(t *testing.T) {
	const ok = `{"name": "near", "country": "DE", "continent": "EU", "up": {"delay_ms": 10}, "down": {"delay_ms": 10}}`
	for _, tc := range []struct {
		name, data string
		want       string // substring of the error; "" for none
	}{
		{"ok", `{"regions": [` + ok + `]}`, ""},
		{"all fields", `{"regions": [{"name": "far", "about": "x", "country": "AU", "continent": "OC", "block_udp": true, "runs": 30,
			"up": {"delay_ms": 120, "jitter_ms": 5, "loss_pct": 1, "loss_burst": 2, "rate_kbit": 20000},
			"down": {"delay_ms": 120}}]}`, ""},
		{"syntax error line", "{\"regions\": [\n" + ok + ",\n{\"name\": }\n]}", "regions.json: line 3, column 10"},
		{"unknown top-level field", `{"regions": [], "region": []}`, `unknown field "region"`},
		{"unknown region field", "{\"regions\": [\n" + ok + ",\n" + `{"name": "x", "delay_ms": 5}` + "]}", `regions[1]: json: unknown field "delay_ms"`},
		{"unknown path field", `{"regions": [{"name": "x", "country": "DE", "continent": "EU", "up": {"delay": 5}}]}`, `unknown field "delay"`},
		{"type error line", "{\"regions\": [\n" + `{"name": "x", "up": {"delay_ms": "5"}}` + "]}", "regions[0]: line 2, column"},
		{"trailing data", `{"regions": [` + ok + `]} {}`, "data after the top-level value"},
		{"no list", `{}`, `no "regions" list`},
		{"empty list", `{"regions": []}`, "the list is empty"},
		{"bad name", `{"regions": [{"name": "Near", "country": "DE", "continent": "EU"}]}`, "regions[0] (Near).name"},
		{"bad country", `{"regions": [{"name": "a", "country": "de", "continent": "EU"}]}`, "regions[0] (a).country: \"de\""},
		{"placeholder country", `{"regions": [{"name": "a", "country": "ZZ", "continent": "EU"}]}`, "placeholder"},
		{"bad continent", `{"regions": [{"name": "a", "country": "DE", "continent": "XX"}]}`, "continent"},
		{"negative delay", `{"regions": [{"name": "a", "country": "DE", "continent": "EU", "up": {"delay_ms": -1}}]}`, "regions[0] (a).up.delay_ms: -1"},
		{"jitter over delay", `{"regions": [{"name": "a", "country": "DE", "continent": "EU", "down": {"delay_ms": 1, "jitter_ms": 2}}]}`, "down.jitter_ms"},
		{"loss 100", `{"regions": [{"name": "a", "country": "DE", "continent": "EU", "up": {"loss_pct": 100}}]}`, "up.loss_pct: 100"},
		{"burst under 1", `{"regions": [{"name": "a", "country": "DE", "continent": "EU", "up": {"loss_pct": 1, "loss_burst": 0.5}}]}`, "up.loss_burst: 0.5"},
		{"burst too long for loss", `{"regions": [{"name": "a", "country": "DE", "continent": "EU", "up": {"loss_pct": 90, "loss_burst": 2}}]}`, "too long a burst"},
		{"negative rate", `{"regions": [{"name": "a", "country": "DE", "continent": "EU", "up": {"rate_kbit": -1}}]}`, "up.rate_kbit"},
		{"negative runs", `{"regions": [{"name": "a", "country": "DE", "continent": "EU", "runs": -1}]}`, "regions[0] (a).runs: -1"},
		{"too many runs", `{"regions": [{"name": "a", "country": "DE", "continent": "EU", "runs": 1001}]}`, "runs: 1001 is outside"},
		{"duplicate name", `{"regions": [` + ok + `, ` + ok + `]}`, `regions[1].name: "near" is also regions[0]`},
		{"every error at once", `{"regions": [{"name": "a", "country": "d", "continent": "x", "up": {"delay_ms": -1}}]}`, "country"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRegions("regions.json", []byte(tc.data))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("no error, want one containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseRegionsReportsAll(t *testing.T) {
	_, err := ParseRegions("r.json", []byte(`{"regions": [{"name": "a", "country": "d", "continent": "x", "up": {"delay_ms": -1}}]}`))
	for _, want := range []string{"r.json: regions[0] (a).country", "continent", "up.delay_ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to name %q", err, want)
		}
	}
}
