package beacon

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzDecode checks that Decode never panics, that every error is a
// *DecodeError with a known reason, and that accepted reports satisfy the
// invariants the ingest side relies on. Run: go test ./beacon -fuzz FuzzDecode -fuzztime 30s
func FuzzDecode(f *testing.F) {
	f.Add(marshal(f, validReport()))
	partial := validReport()
	partial["p"] = true
	partial["s"] = partial["s"].([]any)[:2]
	f.Add(marshal(f, partial))
	minimal := validReport()
	delete(minimal, "c")
	for _, s := range minimal["s"].([]any) {
		delete(s.(map[string]any), "sv")
	}
	f.Add(marshal(f, minimal))
	failed := validReport() // the script's own errors cut the run short
	failed["x"] = map[string]any{"batch": 2, "timing": 1}
	failed["s"] = failed["s"].([]any)[:4]
	f.Add(marshal(f, failed))
	failed["s"] = []any{}
	f.Add(marshal(f, failed))
	hint := validReport()
	hint["c"].(map[string]any)["et"] = `=HYPERLINK("https://x.example")`
	f.Add(marshal(f, hint))
	v2 := validReport()
	v2["v"], v2["alt"] = 2, 2
	f.Add(marshal(f, v2))
	for _, s := range []string{``, `{}`, `{"v":1}`, `{"v":2}`, `{"v":3}`, `{"v":2,"alt":0}`, `{"v":1,"alt":1}`, `[]`, `{"v":1,"s":[{}]}`, `{"V":1}`, `null`,
		`{"v":1,"id":"00112233445566778899aabbccddeeff","site":"s","o":"null","bv":"1","p":true,"mt":0,` +
			`"par":{"n":1,"w":0,"b":0,"ord":"h3first","trg":"manual"},"s":[{"q":0,"ph":"w","w":"h2","g":"h2",` +
			`"st":0,"d":-1,"dns":-1,"con":-1,"tls":-1,"tf":-1,"dl":-1,"r":false,"ts":0}]}`} {
		f.Add([]byte(s))
	}
	reasons := map[string]bool{}
	for _, r := range DecodeReasons() {
		reasons[r] = true
	}
	fields := DecodeFields()
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || !reasons[de.Reason] {
				t.Fatalf("error %v (%T) has no known reason", err, err)
			}
			if de.Field != "" && !slices.Contains(fields, de.Field) {
				t.Fatalf("error %v names the field %q, not one of DecodeFields", err, de.Field)
			}
			if r != nil {
				t.Fatal("report returned with an error")
			}
			return
		}
		total := r.Params.Warmup + 1 + 2*r.Params.Parallel
		if len(r.Samples) == 0 && r.ScriptErrors.Total() == 0 || len(r.Samples) > total || len(r.Samples) > MaxSamples {
			t.Fatalf("%d samples for %+v", len(r.Samples), r.Params)
		}
		seen := map[int]bool{}
		for _, s := range r.Samples {
			if seen[s.Seq] || s.Seq < 0 || s.Seq >= total {
				t.Fatalf("seq %d", s.Seq)
			}
			seen[s.Seq] = true
			for _, d := range []float64{s.Duration, s.DNS, s.Connect, s.TLS, s.TTFB, s.Download} {
				if d < 0 && d != -1 {
					t.Fatalf("duration %g", d)
				}
			}
		}
		if !r.Partial && r.ScriptErrors.Total() == 0 && len(r.Samples) != total {
			t.Fatalf("complete run without errors has %d of %d samples", len(r.Samples), total)
		}
		for _, n := range []int{r.ScriptErrors.Idle, r.ScriptErrors.Warmup, r.ScriptErrors.Batch, r.ScriptErrors.Timing, r.ScriptErrors.Send} {
			if n < 0 || n > MaxScriptErrors {
				t.Fatalf("script errors %+v", r.ScriptErrors)
			}
		}
		if et := r.Client.EffectiveType; et != "" && !slices.Contains(EffectiveTypes[:], et) {
			t.Fatalf("effective type %q outside the enum", et)
		}
		// An accepted report holds no NaN or Inf (it marshals).
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzFastPath is differential: whatever the fast path accepts, the
// general path (encoding/json and the key checks) must accept too, with
// the very same wire values, so that Decode's verdicts do not depend on
// which path ran. Two design parameters are added to the embedding's, so
// that par's keys beyond its own are read too.
// Run: go test ./beacon -fuzz FuzzFastPath -fuzztime 30s
func FuzzFastPath(f *testing.F) {
	withDesignParams(f)
	f.Add(marshal(f, validReport()))
	design := validReport()
	design["par"].(map[string]any)["zgap"] = 100
	design["par"].(map[string]any)["zpause"] = 50
	f.Add(marshal(f, design))
	minimal := validReport()
	delete(minimal, "c")
	f.Add(marshal(f, minimal))
	failed := validReport()
	failed["x"] = map[string]any{"idle": 1, "send": 65535}
	f.Add(marshal(f, failed))
	v2 := validReport()
	v2["v"], v2["alt"] = 2, 5
	f.Add(marshal(f, v2))
	for _, s := range []string{
		`{"v":2,"alt":1}`, `{"v":2,"alt":6}`, `{"v":2,"alt":1,"alt":1}`, `{"v":2,"alt":"1"}`, `{"v":2,"alt":null}`, `{"v":1,"alt":2}`,
		`{"v":1}`, `{"v":1,"s":[]}`, `{"v":1,"c":{"br":[[],["a"],["a","b","c"]]}}`, `{"v":1,"c":{"br":[]}}`,
		`{"v":1,"par":{}}`, `{"v":1,"v":1}`, `{"V":1}`, `{"v":1.0}`, `{"v":1e0}`, `{"v":-0}`, `{"v":1,"mt":1e400}`,
		`{"v":1,"id":"\u0041"}`, `{"v":1,"id":"é"}`, `{"v":1,"p":null}`, ` {"v":1} `, `{"v":1}x`, `{"v":1}}`,
		`{"v":1,"s":[{"q":01}]}`, `{"v":1,"s":[{"q":1.5}]}`, `{"v":1,"s":[{"sv":{"lost":99999999999999999999}}]}`,
		`{"v":1,"x":{"idle":1,"warmup":2,"batch":3,"timing":4,"send":5}}`, `{"v":1,"x":{}}`, `{"v":1,"x":{"batch":1,"batch":1}}`,
		`{"v":1,"x":{"boot":1}}`, `{"v":1,"x":{"send":1.0}}`, `{"v":1,"x":{"send":"1"}}`, `{"v":1,"x":[]}`, `{"v":1,"x":null}`,
		`{"v":1,"c":{"et":"slow-2g"}}`, `{"v":1,"c":{"et":"=HYPERLINK(1)"}}`, `{"v":1,"c":{"et":""}}`, `{"v":1,"c":{"et":4}}`,
		`{"v":1,"par":{"zgap":1}}`, `{"v":1,"par":{"zpause":-1,"zgap":1001}}`, `{"v":1,"par":{"zgap":1,"zgap":2}}`, `{"v":1,"par":{"zgap":null}}`,
		`{"v":1,"par":{"zgap":1.5}}`, `{"v":1,"par":{"zgap":"1"}}`, `{"v":1,"par":{"zzz":1}}`, `{"v":1,"par":{"parallel":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := fastDecode(data, arenas.Get().(*arena))
		if !ok {
			return
		}
		general, err := decodeWire(data)
		if err != nil {
			t.Fatalf("fast path accepted what the general path rejects (%v): %q", err, data)
		}
		if !reflect.DeepEqual(fast, general) {
			t.Fatalf("paths disagree on %q", data)
		}
	})
}

// The reports browsers send take the fast path.
func TestFastPathTakesCanonicalReports(t *testing.T) {
	for name, data := range map[string][]byte{"valid": marshal(t, validReport()), "example": protocolExample(t)} {
		if _, ok := fastDecode(data, arenas.Get().(*arena)); !ok {
			t.Errorf("%s report fell back to the general path", name)
		}
	}
	if _, ok := fastDecode([]byte(`{"v":1,"id":"\u0030"}`), arenas.Get().(*arena)); ok {
		t.Error("an escaped string took the fast path")
	}
}

// simpleDecimal agrees with strconv.ParseFloat wherever it answers.
func FuzzSimpleDecimal(f *testing.F) {
	for _, s := range []string{"0", "-0", "12.5", "0.1", "123456789012345", "1234567890.12345", "-3.25", "9007199254740993", "1.", ".5", "1e3", "--1", "0.000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := simpleDecimal(s)
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(v) != math.Float64bits(want) {
			t.Fatalf("simpleDecimal(%q) = %v, ParseFloat says %v (%v)", s, v, want, err)
		}
	})
}

// FuzzScriptConfig feeds ParseScriptConfig the query strings anyone may
// put on a public script URL. It never panics; a query naming none of the
// parameters is no configuration; an accepted one has h3 and h2 and only
// known parameters, each passing its check; and the script written with
// it is the built script with the slot replaced by a JSON object that
// reads back as the configuration and cannot end the script element or a
// JavaScript string. Run: go test ./beacon -fuzz FuzzScriptConfig -fuzztime 30s
func FuzzScriptConfig(f *testing.F) {
	for _, s := range []string{
		"", "v=2", "v=%zz", "h3=https://h3.example.com&h2=https://h2.example.com:8443",
		"h3=https%3A%2F%2Fh3.example.com&h2=https://h2.example.com&site=shop&sample=1e-2&parallel=20&warmup=0&bytes=0&trigger=manual&order=h2first&endpoint=http://i.example/",
		"h3=https://h3.example.com&h2=https://h2.example.com&site=a&site=b", "h3=https://x&h2=https://y&sample=0x1p-2",
		"h3=https://%E4%BE%8B.jp&h2=http://[::1]:1", "h3=https://a</script>&h2=https://b", "site=%E2%80%A8",
		"h3=https://h3.example.com&h2=https://h2.example.com&consent=wait", "consent=wait",
	} {
		f.Add(s)
	}
	before, after, ok := strings.Cut(scriptJS, configSlot)
	if !ok {
		f.Fatal("the built script has no configuration slot")
	}
	f.Fuzz(func(t *testing.T, query string) {
		cfg, err := ParseScriptConfig(query)
		if err != nil {
			if cfg != nil {
				t.Fatal("configuration returned with an error")
			}
			return
		}
		if cfg == nil {
			q, _ := url.ParseQuery(query)
			for k := range q {
				if _, known := scriptParams[k]; known {
					t.Fatalf("%q names %s but was taken for no configuration", query, k)
				}
			}
			return
		}
		if cfg["h3"] == "" || cfg["h2"] == "" {
			t.Fatalf("%q accepted without h3 and h2: %v", query, cfg)
		}
		for k, v := range cfg {
			check, known := scriptParams[k]
			if !known {
				t.Fatalf("%q accepted with unknown parameter %q", query, k)
			}
			if err := check(v); err != nil {
				t.Fatalf("%q accepted %s=%q: %v", query, k, v, err)
			}
		}
		js, err := ConfiguredScript(cfg)
		if err != nil {
			t.Fatal(err)
		}
		lit, ok := strings.CutPrefix(js, before)
		if !ok {
			t.Fatal("configured script does not start as the built one")
		}
		if lit, ok = strings.CutSuffix(lit, after); !ok {
			t.Fatal("configured script does not end as the built one")
		}
		if strings.ContainsAny(lit, "<>&\u2028\u2029\n\r") {
			t.Fatalf("configuration literal %q holds a character that could end the script element or a string", lit)
		}
		var back map[string]string
		if err := json.Unmarshal([]byte(lit), &back); err != nil || !maps.Equal(back, cfg) {
			t.Fatalf("literal %q reads back as %v (%v), want %v", lit, back, err, cfg)
		}
	})
}
