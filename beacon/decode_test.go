package beacon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// validReport returns a complete v1 report (w=2, n=3, h2first) as a
// generic JSON value that tests mutate.
func validReport() map[string]any {
	sv := func(p string, creq int) map[string]any {
		return map[string]any{"proto": p, "app": 0.052, "rtt": 23.456, "minrtt": 21.5, "rttvar": 3.25,
			"lost": 0, "cid": "c1f3", "creq": creq, "age": 812.5, "resumed": 0, "early": 1}
	}
	s := func(q int, ph, w, g string) map[string]any {
		return map[string]any{"q": q, "ph": ph, "w": w, "g": g, "st": 10.5 * float64(q), "d": 30.2, "dns": 0,
			"con": 9.1, "tls": 5, "tf": 19.1, "dl": 0.3, "r": q > 1, "ts": 300, "sv": sv(g, q+1)}
	}
	samples := []any{
		s(0, "w", "h3", "h2"), s(1, "w", "h3", "h3"), s(2, "w", "h2", "h2"),
		s(3, "p", "h2", "h2"), s(4, "p", "h2", "h2"), s(5, "p", "h2", "h2"),
		s(6, "p", "h3", "h3"), s(7, "p", "h3", "h3"), s(8, "p", "h3", "h3"),
	}
	return map[string]any{
		"v": 1, "id": "00112233445566778899aabbccddeeff", "site": "shop", "o": "https://www.shop.example:8443",
		"bv": "1.0.0", "p": false, "mt": 0.45,
		"par": map[string]any{"n": 3, "w": 2, "b": 0, "ord": "h2first", "trg": "load"},
		"c": map[string]any{"br": []any{[]any{"Not)A;Brand", "8"}, []any{"Chromium", "156"}}, "pf": "Linux",
			"mb": false, "et": "4g", "rtt": 50, "dl": 10, "wd": true},
		"s": samples,
	}
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sampleAt(r map[string]any, i int) map[string]any { return r["s"].([]any)[i].(map[string]any) }

func TestDecodeValid(t *testing.T) {
	r, err := Decode(marshal(t, validReport()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != 1 || r.Site != "shop" || r.PageOrigin != "https://www.shop.example:8443" || r.BeaconVersion != "1.0.0" ||
		r.Partial || r.MainThreadMS != 0.45 {
		t.Errorf("header: %+v", r)
	}
	if r.RunID != [16]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff} {
		t.Errorf("run id %x", r.RunID)
	}
	if want := (Params{Parallel: 3, Warmup: 2, Bytes: 0, Order: "h2first", Trigger: "load"}); r.Params != want {
		t.Errorf("params %+v, want %+v", r.Params, want)
	}
	c := r.Client
	if len(c.Brands) != 2 || c.Brands[1] != (Brand{"Chromium", "156"}) || c.Platform != "Linux" || c.Mobile ||
		c.EffectiveType != "4g" || c.RTT != 50 || c.Downlink != 10 || !c.Webdriver {
		t.Errorf("client %+v", c)
	}
	if len(r.Samples) != 9 {
		t.Fatalf("%d samples", len(r.Samples))
	}
	s := r.Samples[6]
	want := Sample{Seq: 6, Phase: PhaseParallel, Want: ProtoH3, Got: ProtoH3, Start: 63, Duration: 30.2, DNS: 0,
		Connect: 9.1, TLS: 5, TTFB: 19.1, Download: 0.3, Reused: true, TransferSize: 300,
		Server: ServerTiming{Present: true, Proto: ProtoH3, Handle: 0.052, RTT: 23.456, MinRTT: 21.5, RTTVar: 3.25,
			Lost: 0, ConnID: "c1f3", ConnReqs: 7, ConnAge: 812.5, Resumed: false, EarlyData: true}}
	if s != want {
		t.Errorf("sample 6:\n got %+v\nwant %+v", s, want)
	}
	if r.Samples[0].Phase != PhaseWarmup || r.Samples[2].Want != ProtoH2 || r.Samples[0].Got != ProtoH2 {
		t.Errorf("warm-up samples %+v", r.Samples[:3])
	}
}

func TestDecodeDefaults(t *testing.T) {
	// Optional parts left out: client info, server timing, error.
	v := validReport()
	delete(v, "c")
	s := sampleAt(v, 4)
	delete(s, "sv")
	s["e"] = "timeout"
	s["d"], s["dns"], s["g"] = -1, -1, "unknown"
	r, err := Decode(marshal(t, v))
	if err != nil {
		t.Fatal(err)
	}
	if r.Client.RTT != -1 || r.Client.Downlink != -1 || r.Client.Brands != nil || r.Client.Webdriver {
		t.Errorf("client defaults %+v", r.Client)
	}
	got := r.Samples[4]
	if got.Error != "timeout" || got.Duration != -1 || got.DNS != -1 || got.Got != ProtoUnknown {
		t.Errorf("sample %+v", got)
	}
	if want := (ServerTiming{Proto: ProtoUnknown, Handle: -1, RTT: -1, MinRTT: -1, RTTVar: -1, ConnAge: -1}); got.Server != want {
		t.Errorf("server timing %+v, want %+v", got.Server, want)
	}
	// A server-timing object with only some metrics.
	v = validReport()
	sampleAt(v, 0)["sv"] = map[string]any{"cid": "x"}
	if r, err = Decode(marshal(t, v)); err != nil {
		t.Fatal(err)
	}
	if want := (ServerTiming{Present: true, Proto: ProtoUnknown, Handle: -1, RTT: -1, MinRTT: -1, RTTVar: -1, ConnID: "x", ConnAge: -1}); r.Samples[0].Server != want {
		t.Errorf("server timing %+v, want %+v", r.Samples[0].Server, want)
	}
}

// c.et keeps the four values browsers send, and anything else becomes
// unknown ("", as if absent) without costing the report: free text would
// land in storage, in by=connection groups and in spreadsheets opening the
// CSV. Both decoding paths agree (the escaped copy takes the general one).
func TestDecodeEffectiveType(t *testing.T) {
	for _, tc := range []struct {
		et   any
		want string
	}{
		{"slow-2g", "slow-2g"}, {"2g", "2g"}, {"3g", "3g"}, {"4g", "4g"},
		{`=HYPERLINK("https://x.example","4g")`, ""},
		{"=1+1", ""}, {"@SUM(1)", ""}, {"5g", ""}, {"4G", ""}, {" 4g", ""}, {"4g\n", ""},
		{"", ""}, {strings.Repeat("4g", 9), ""}, {"wifi", ""}, {"offline", ""},
	} {
		v := validReport()
		v["c"].(map[string]any)["et"] = tc.et
		canonical := marshal(t, v)
		escaped := []byte(strings.Replace(string(canonical), `"site":"shop"`, `"site":"\u0073hop"`, 1))
		if _, fast := fastDecode(escaped, arenas.Get().(*arena)); fast {
			t.Fatal("the escaped report took the fast path")
		}
		for path, b := range map[string][]byte{"canonical": canonical, "escaped": escaped} {
			r, err := Decode(b)
			if err != nil {
				t.Errorf("et %q, %s: %v; want the report accepted", tc.et, path, err)
				continue
			}
			if r.Client.EffectiveType != tc.want {
				t.Errorf("et %q, %s: stored %q, want %q", tc.et, path, r.Client.EffectiveType, tc.want)
			}
		}
	}
	// A non-string is still a malformed report, as every wrong JSON type.
	v := validReport()
	v["c"].(map[string]any)["et"] = 4
	checkReason(t, marshal(t, v), ReasonField)
}

// Wire v2 carries alt, each of its values read on both paths; a v1 report
// reads as not recorded.
func TestDecodeAltSvc(t *testing.T) {
	r, err := Decode(marshal(t, validReport()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != 1 || r.AltSvc != AltSvcUnrecorded {
		t.Errorf("v1: version %d, alt %d; want 1, %d", r.Version, r.AltSvc, AltSvcUnrecorded)
	}
	for a := AltSvcNone; a <= MaxAltSvc; a++ {
		v := validReport()
		v["v"], v["alt"] = 2, int(a)
		b := marshal(t, v)
		r, err := Decode(b)
		if err != nil {
			t.Fatalf("alt %d: %v", a, err)
		}
		if r.Version != 2 || r.AltSvc != a {
			t.Errorf("alt %d: version %d, alt %d", a, r.Version, r.AltSvc)
		}
		if _, ok := fastDecode(b, arenas.Get().(*arena)); !ok {
			t.Errorf("alt %d: fell back to the general path", a)
		}
		back, err := Encode(r)
		if err != nil {
			t.Fatalf("alt %d: Encode: %v", a, err)
		}
		if !strings.Contains(string(back), `"v":2,`) || !strings.Contains(string(back), fmt.Sprintf(`"alt":%d,`, a)) {
			t.Errorf("alt %d: encoded %s", a, back)
		}
	}
	// Encode keeps an older version's form: no alt in v1.
	r.Version, r.AltSvc = 1, AltSvcUnrecorded
	b, err := Encode(r)
	if err != nil || strings.Contains(string(b), `"alt"`) {
		t.Errorf("v1 Encode: %s, %v", b, err)
	}
}

func TestDecodePartial(t *testing.T) {
	v := validReport()
	v["p"] = true
	v["s"] = []any{sampleAt(v, 2), sampleAt(v, 0), sampleAt(v, 7)} // any subset, any order
	r, err := Decode(marshal(t, v))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Partial || len(r.Samples) != 3 || r.Samples[1].Seq != 0 {
		t.Errorf("partial report %+v", r)
	}
}

func TestDecodeInvalid(t *testing.T) {
	type mutate func(v map[string]any)
	set := func(k string, x any) mutate { return func(v map[string]any) { v[k] = x } }
	del := func(k string) mutate { return func(v map[string]any) { delete(v, k) } }
	par := func(k string, x any) mutate { return func(v map[string]any) { v["par"].(map[string]any)[k] = x } }
	cl := func(k string, x any) mutate { return func(v map[string]any) { v["c"].(map[string]any)[k] = x } }
	smp := func(i int, k string, x any) mutate { return func(v map[string]any) { sampleAt(v, i)[k] = x } }
	sdel := func(i int, k string) mutate { return func(v map[string]any) { delete(sampleAt(v, i), k) } }
	srv := func(i int, k string, x any) mutate {
		return func(v map[string]any) { sampleAt(v, i)["sv"].(map[string]any)[k] = x }
	}
	tests := []struct {
		name   string
		m      mutate
		reason string
	}{
		{"version 3", set("v", 3), ReasonVersion},
		{"version 0", set("v", 0), ReasonVersion},
		{"alt in v1", set("alt", 2), ReasonField},
		{"alt missing in v2", set("v", 2), ReasonField},
		{"alt 0 in v2", func(v map[string]any) { v["v"], v["alt"] = 2, 0 }, ReasonValue},
		{"alt 6 in v2", func(v map[string]any) { v["v"], v["alt"] = 2, 6 }, ReasonValue},
		{"alt negative", func(v map[string]any) { v["v"], v["alt"] = 2, -1 }, ReasonValue},
		{"alt a string", func(v map[string]any) { v["v"], v["alt"] = 2, "2" }, ReasonField},
		{"alt a fraction", func(v map[string]any) { v["v"], v["alt"] = 2, 2.5 }, ReasonField},
		{"version string", set("v", "1"), ReasonVersion},
		{"version float", set("v", 1.0001), ReasonVersion},
		{"no version", del("v"), ReasonVersion},
		{"unknown field", set("extra", 1), ReasonField},
		{"unknown sample field", smp(3, "zz", 1), ReasonField},
		{"unknown server timing", srv(3, "cdn", 1), ReasonField},
		{"run id short", set("id", "0011"), ReasonValue},
		{"run id upper", set("id", "00112233445566778899AABBCCDDEEFF"), ReasonValue},
		{"run id not hex", set("id", "00112233445566778899aabbccddeefg"), ReasonValue},
		{"run id number", set("id", 7), ReasonField},
		{"no run id", del("id"), ReasonField},
		{"site empty", set("site", ""), ReasonValue},
		{"site long", set("site", strings.Repeat("a", 65)), ReasonLimit},
		{"site chars", set("site", "shop<script>"), ReasonValue},
		{"no site", del("site"), ReasonField},
		{"origin with path", set("o", "https://a.example/page"), ReasonValue},
		{"origin with query", set("o", "https://a.example?x"), ReasonValue},
		{"origin ftp", set("o", "ftp://a.example"), ReasonValue},
		{"origin long", set("o", "https://"+strings.Repeat("a", 300)), ReasonLimit},
		{"beacon version empty", set("bv", ""), ReasonValue},
		{"partial not bool", set("p", 1), ReasonField},
		{"partial null", set("p", nil), ReasonField},
		{"main thread negative", set("mt", -0.1), ReasonValue},
		{"main thread huge", set("mt", 1e9), ReasonValue},
		{"no params", del("par"), ReasonField},
		{"parallel 0", par("n", 0), ReasonValue},
		{"parallel 21", par("n", 21), ReasonLimit},
		{"parallel float", par("n", 2.5), ReasonField},
		{"warmup 11", par("w", 11), ReasonLimit},
		{"bytes negative", par("b", -1), ReasonValue},
		{"order", par("ord", "random"), ReasonValue},
		{"trigger", par("trg", "click"), ReasonValue},
		{"no order", func(v map[string]any) { delete(v["par"].(map[string]any), "ord") }, ReasonField},
		{"too many brands", cl("br", []any{[]any{"a", "1"}, []any{"a", "1"}, []any{"a", "1"}, []any{"a", "1"},
			[]any{"a", "1"}, []any{"a", "1"}, []any{"a", "1"}, []any{"a", "1"}, []any{"a", "1"}}), ReasonLimit},
		{"brand pair", cl("br", []any{[]any{"a"}}), ReasonValue},
		{"brand control char", cl("br", []any{[]any{"a\n", "1"}}), ReasonValue},
		{"brand long", cl("br", []any{[]any{strings.Repeat("b", 65), "1"}}), ReasonLimit},
		{"client rtt negative", cl("rtt", -5), ReasonValue},
		{"client mobile string", cl("mb", "no"), ReasonField},
		{"no samples field", del("s"), ReasonField},
		{"samples null", set("s", nil), ReasonField},
		{"no samples", set("s", []any{}), ReasonValue},
		{"complete run missing a sample", func(v map[string]any) { v["s"] = v["s"].([]any)[1:] }, ReasonValue},
		{"more samples than parameters", func(v map[string]any) {
			v["p"] = true
			v["s"] = append(v["s"].([]any), sampleAt(validReport(), 0))
		}, ReasonLimit},
		{"duplicate seq", smp(1, "q", 0), ReasonValue},
		{"seq out of range", smp(1, "q", 9), ReasonValue},
		{"seq negative", smp(1, "q", -1), ReasonValue},
		{"phase wrong for seq", smp(3, "ph", "w"), ReasonValue},
		{"phase unknown", smp(3, "ph", "x"), ReasonValue},
		{"want wrong for order", smp(3, "w", "h3"), ReasonValue},
		{"want h3 for h2 warm-up", smp(2, "w", "h3"), ReasonValue},
		{"got invalid", smp(3, "g", "h2c"), ReasonValue},
		{"negative duration", smp(3, "d", -5), ReasonValue},
		{"negative dns", smp(3, "dns", -0.5), ReasonValue},
		{"duration huge", smp(3, "tf", 4e6), ReasonValue},
		{"start unknown", smp(3, "st", -1), ReasonValue},
		{"duration string", smp(3, "d", "5"), ReasonField},
		{"missing duration", sdel(3, "con"), ReasonField},
		{"missing reused", sdel(3, "r"), ReasonField},
		{"transfer size negative", smp(3, "ts", -1), ReasonValue},
		{"error code", smp(3, "e", "Timeout!"), ReasonValue},
		{"error empty", smp(3, "e", ""), ReasonValue},
		{"server proto", srv(3, "proto", "quic"), ReasonValue},
		{"server rtt negative", srv(3, "rtt", -1), ReasonValue},
		{"server creq 0", srv(3, "creq", 0), ReasonValue},
		{"server lost negative", srv(3, "lost", -1), ReasonValue},
		{"server resumed 2", srv(3, "resumed", 2), ReasonValue},
		{"server cid space", srv(3, "cid", "a b"), ReasonValue},
		{"server cid long", srv(3, "cid", strings.Repeat("c", 65)), ReasonLimit},
		{"server age negative", srv(3, "age", -1), ReasonValue},
		{"server age over an hour", srv(3, "age", 3_600_001), ReasonValue},
		{"server age a string", srv(3, "age", "812"), ReasonField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := validReport()
			tt.m(v)
			checkReason(t, marshal(t, v), tt.reason)
		})
	}
}

// withDesignParams adds two design parameters the embedding does not have
// (their names are the test's own) to scriptParamList for the test: zgap, 0 to 1000 with default 0, and
// zpause, 0 to 500 with default 50.
func withDesignParams(t testing.TB) {
	t.Helper()
	saved := scriptParamList
	scriptParamList = append(slices.Clip(saved),
		designParam("zgap", "ms between the batches", 0, 1000, 0, ""),
		designParam("zpause", "ms before the first request", 0, 500, 50, ""))
	t.Cleanup(func() { scriptParamList = saved })
}

// A design parameter comes back in par under its name, is checked against
// its range as n is, and is stored in Params.Extra in canonical form; both
// decoding paths read it alike (the escaped copy takes the general one).
// Without the parameter in the embedding's table, its key is refused as
// any unknown one.
func TestDecodeDesignParams(t *testing.T) {
	valid := string(marshal(t, validReport()))
	const own = `"b":0,"n":3,"ord":"h2first","trg":"load","w":2`
	if !strings.Contains(valid, `"par":{`+own+`}`) {
		t.Fatalf("validReport's par is not {%s}: %s", own, valid)
	}
	withPar := func(par string) (canonical, escaped []byte) {
		s := strings.Replace(valid, `"par":{`+own+`}`, `"par":`+par, 1)
		return []byte(s), []byte(strings.Replace(s, `"site":"shop"`, `"site":"\u0073hop"`, 1))
	}

	unknown, _ := withPar(`{` + own + `,"zgap":100}`)
	if _, err := Decode(unknown); err == nil || err.Error() != `field: unknown field "zgap"` {
		t.Fatalf("zgap before it is a design parameter: %v", err)
	}

	withDesignParams(t)
	for _, tc := range []struct {
		name  string
		par   string
		extra string // Params.Extra when accepted
		err   string // the error, "" when accepted
		fast  bool   // the canonical body takes the fast path
	}{
		{"absent", `{` + own + `}`, "", "", true},
		{"null", `{` + own + `,"zgap":null}`, "", "", false},
		{"set", `{` + own + `,"zgap":100}`, "zgap=100", "", true},
		{"first key", `{"zgap":100,` + own + `}`, "zgap=100", "", true},
		{"at its default", `{` + own + `,"zgap":0}`, "", "", true},
		{"at a non-zero default", `{` + own + `,"zpause":50}`, "", "", true},
		{"zero off a non-zero default", `{` + own + `,"zpause":0}`, "zpause=0", "", true},
		{"in the table's order", `{` + own + `,"zpause":60,"zgap":1000}`, "zgap=1000,zpause=60", "", true},
		{"one at its default", `{"zpause":500,` + own + `,"zgap":0}`, "zpause=500", "", true},
		{"above its range", `{` + own + `,"zgap":1001}`, "", "limit: par.zgap is 1001, want 0 to 1000", true},
		{"below its range", `{` + own + `,"zpause":-1}`, "", "value: par.zpause is -1, want 0 to 500", true},
		{"n above its range, alike", `{"b":0,"n":21,"ord":"h2first","trg":"load","w":2}`, "", "limit: par.n is 21, want 1 to 20", true},
		{"fraction", `{` + own + `,"zgap":1.5}`, "", "field: par.zgap: JSON number 1.5 where int belongs", false},
		{"n a fraction, alike", `{"b":0,"n":2.5,"ord":"h2first","trg":"load","w":2}`, "", "field: par.n: JSON number 2.5 where int belongs", false},
		{"exponent", `{` + own + `,"zgap":1e2}`, "", "field: par.zgap: JSON number 1e2 where int belongs", false},
		{"string", `{` + own + `,"zgap":"100"}`, "", "field: par.zgap: JSON string where int belongs", false},
		{"object", `{` + own + `,"zgap":{}}`, "", "field: par.zgap: JSON object where int belongs", false},
		{"duplicate", `{` + own + `,"zgap":1,"zgap":1}`, "", `field: duplicate field "zgap"`, false},
		{"unknown key", `{` + own + `,"zzz":1}`, "", `field: unknown field "zzz"`, false},
		{"a parameter not of the design", `{` + own + `,"parallel":3}`, "", `field: unknown field "parallel"`, false},
		{"par not an object", `[]`, "", "field: par: JSON array where beacon.wireParams belongs", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			canonical, escaped := withPar(tc.par)
			fw, fast := fastDecode(canonical, arenas.Get().(*arena))
			if fast != tc.fast {
				t.Errorf("fast path took it: %v, want %v", fast, tc.fast)
			}
			if gw, err := decodeWire(canonical); fast && (err != nil || !reflect.DeepEqual(fw, gw)) {
				t.Errorf("the general path reads %+v (%v), the fast path %+v", gw.Par, err, fw.Par)
			}
			var reports []*Report
			for _, b := range [][]byte{canonical, escaped} {
				r, err := Decode(b)
				if err != nil {
					if err.Error() != tc.err {
						t.Fatalf("error %q, want %q", err, tc.err)
					}
					var de *DecodeError
					if !errors.As(err, &de) {
						t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
					}
					continue
				}
				if tc.err != "" {
					t.Fatalf("accepted with Extra %q, want error %q", r.Params.Extra, tc.err)
				}
				if r.Params.Extra != tc.extra {
					t.Errorf("Extra %q, want %q", r.Params.Extra, tc.extra)
				}
				reports = append(reports, r)
			}
			if len(reports) == 2 && !reflect.DeepEqual(reports[0], reports[1]) {
				t.Errorf("the two paths read\n%+v\n%+v", reports[0].Params, reports[1].Params)
			}
		})
	}
}

// Each design parameter can come back in par: its name is a key the
// decoder reads, none of par's own, and the fast path has a bit for it.
func TestDesignParamsAreParKeys(t *testing.T) {
	if want := []string{"n", "w", "b", "ord", "trg"}; !slices.Equal(wireParamsKeys, want) {
		t.Fatalf("par's own keys are %q, want %q: the fast path numbers them so", wireParamsKeys, want)
	}
	check := func(t *testing.T) {
		n := 0
		for _, p := range scriptParamList {
			if !p.design {
				continue
			}
			n++
			if !isKey([]byte(p.Name)) || slices.Contains(wireParamsKeys, p.Name) || p.hi == 0 {
				t.Errorf("design parameter %q is not an integer parameter under a key of its own", p.Name)
			}
		}
		if len(wireParamsKeys)+n > 16 {
			t.Errorf("par may carry %d keys, more than an object may have", len(wireParamsKeys)+n)
		}
	}
	t.Run("the embedding's", check)
	t.Run("with two more", func(t *testing.T) {
		withDesignParams(t)
		check(t)
		if _, g := designIndex("zgap"); g < 0 {
			t.Error("zgap is not a design parameter")
		} else if _, i := designIndex("zpause"); i != g+1 {
			t.Errorf("zpause is design parameter %d, want %d, the one after zgap", i, g+1)
		}
	})
}

func TestDecodeInvalidJSON(t *testing.T) {
	valid := string(marshal(t, validReport()))
	tests := []struct {
		name, body, reason string
	}{
		{"empty", "", ReasonJSON},
		{"syntax", `{"v":1,`, ReasonJSON},
		{"array", `[1]`, ReasonJSON},
		{"string", `"v"`, ReasonJSON},
		{"trailing object", valid + `{}`, ReasonJSON},
		{"trailing garbage", valid + `x`, ReasonJSON},
		{"upper-case key", strings.Replace(valid, `"site"`, `"Site"`, 1), ReasonField},
		{"folded key", strings.Replace(valid, `"site"`, `"ſite"`, 1), ReasonField},
		{"duplicate key", strings.Replace(valid, `"site":"shop"`, `"site":"shop","site":"evil"`, 1), ReasonField},
		{"deep nesting", `{"v":1,"c":{"br":[[[["x"]]]]}}`, ReasonLimit},
		{"too large", `{"v":1,"x":"` + strings.Repeat("a", MaxReportBytes) + `"}`, ReasonSize},
		{"number overflow", strings.Replace(valid, `"mt":0.45`, `"mt":1e400`, 1), ReasonField},
		{"invalid utf-8 is replaced, then fails the charset", strings.Replace(valid, `"shop"`, "\"sh\xffop\"", 1), ReasonValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkReason(t, []byte(tt.body), tt.reason) })
	}
}

func checkReason(t *testing.T, body []byte, reason string) {
	t.Helper()
	r, err := Decode(body)
	if err == nil {
		t.Fatalf("decoded %+v, want a %q error", r, reason)
	}
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
	}
	if de.Reason != reason {
		t.Errorf("reason %q (%v), want %q", de.Reason, err, reason)
	}
	if r != nil {
		t.Errorf("report %+v alongside error", r)
	}
	if strings.Contains(de.Msg, "\n") || de.Msg == "" {
		t.Errorf("message %q is not one line", de.Msg)
	}
	if de.Field != "" && !slices.Contains(DecodeFields(), de.Field) {
		t.Errorf("field %q (%v) is not one of DecodeFields", de.Field, err)
	}
}

// A refusal names the wire field at fault, the same for every sample, so
// that the collector can count refusals by field with a fixed set of
// labels; one that no known field is at fault for names none, whatever
// key the sender made up.
func TestDecodeErrorField(t *testing.T) {
	smp := func(i int, k string, x any) func(map[string]any) {
		return func(v map[string]any) { sampleAt(v, i)[k] = x }
	}
	for _, tc := range []struct {
		name  string
		m     func(map[string]any)
		field string
	}{
		{"headless Chromium's negative duration", smp(0, "d", -2981.9), "s.d"},
		{"the same in another sample", smp(4, "d", -2981.9), "s.d"},
		{"a phase beyond an hour", smp(3, "tf", 4e6), "s.tf"},
		{"start unknown", smp(3, "st", -1), "s.st"},
		{"missing phase", func(v map[string]any) { delete(sampleAt(v, 3), "con") }, "s.con"},
		{"duration a string", smp(3, "d", "5"), "s.d"},
		{"server duration", func(v map[string]any) { sampleAt(v, 3)["sv"].(map[string]any)["rtt"] = -1 }, "s.sv.rtt"},
		{"server count", func(v map[string]any) { sampleAt(v, 3)["sv"].(map[string]any)["creq"] = 0 }, "s.sv.creq"},
		{"main thread", func(v map[string]any) { v["mt"] = 1e9 }, "mt"},
		{"client rtt", func(v map[string]any) { v["c"].(map[string]any)["rtt"] = -5 }, "c.rtt"},
		{"brand", func(v map[string]any) { v["c"].(map[string]any)["br"] = []any{[]any{"a\n", "1"}} }, "c.br"},
		{"parallel", func(v map[string]any) { v["par"].(map[string]any)["n"] = 21 }, "par.n"},
		{"script errors", func(v map[string]any) { v["x"] = map[string]any{"send": 0} }, "x.send"},
		{"origin", func(v map[string]any) { v["o"] = "ftp://a.example" }, "o"},
		{"run id", func(v map[string]any) { v["id"] = "0011" }, "id"},
		{"duplicate seq", smp(1, "q", 0), "s.q"},
		{"complete run short of a sample", func(v map[string]any) { v["s"] = v["s"].([]any)[1:] }, "s"},
		{"an unknown key names no field", func(v map[string]any) { v["s.d"] = 1 }, ""},
		{"an unknown sample key", smp(3, "zz", 1), ""},
		{"another version", func(v map[string]any) { v["v"] = 3 }, ""},
		{"alt", func(v map[string]any) { v["v"], v["alt"] = 2, 9 }, "alt"},
		{"alt missing", func(v map[string]any) { v["v"] = 2 }, "alt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := validReport()
			tc.m(v)
			_, err := Decode(marshal(t, v))
			de, ok := errors.AsType[*DecodeError](err)
			if !ok || de.Field != tc.field {
				t.Errorf("Decode: %v, field %q; want the field %q", err, de.Field, tc.field)
			}
		})
	}
	if f := DecodeFields(); len(f) < 50 || !slices.Contains(f, "s.d") || !slices.Contains(f, "s.sv.age") || slices.Contains(f, "") {
		t.Errorf("DecodeFields() = %v", f)
	}
}

// TestDecodeMaxReport checks that the largest report the protocol allows
// fits MaxReportBytes, and prints its size for the ingest body cap.
func TestDecodeMaxReport(t *testing.T) {
	v := validReport()
	v["par"] = map[string]any{"n": MaxParallel, "w": MaxWarmup, "b": MaxBytes, "ord": "h3first", "trg": "manual"}
	long := strings.Repeat("x", maxTextLen)
	var brs []any
	for range maxBrands {
		brs = append(brs, []any{long, strings.Repeat("9", 32)})
	}
	v["c"].(map[string]any)["br"] = brs
	var s []any
	for q := range MaxSamples {
		ph, w := "p", "h2"
		switch {
		case q < MaxWarmup:
			ph, w = "w", "h3"
		case q == MaxWarmup:
			ph = "w"
		case q <= MaxWarmup+MaxParallel:
			w = "h3"
		}
		s = append(s, map[string]any{"q": q, "ph": ph, "w": w, "g": "unknown", "st": 3599999.999, "d": 3599999.999,
			"dns": 3599999.999, "con": 3599999.999, "tls": 3599999.999, "tf": 3599999.999, "dl": 3599999.999,
			"r": false, "ts": 1 << 30, "e": strings.Repeat("e", 32),
			"sv": map[string]any{"proto": "unknown", "app": 3599999.999, "rtt": 3599999.999, "minrtt": 3599999.999,
				"rttvar": 3599999.999, "lost": maxCount, "cid": long, "creq": maxCount, "resumed": 1, "early": 1}})
	}
	v["s"] = s
	b := marshal(t, v)
	t.Logf("largest valid report: %d bytes (limit %d)", len(b), MaxReportBytes)
	if _, err := Decode(b); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkDecode(b *testing.B) {
	body := marshal(b, validReport())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProtocolExample decodes the example in PROTOCOL.md, so the document
// cannot drift from the decoder.
func TestProtocolExample(t *testing.T) {
	r, err := Decode(protocolExample(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Samples) != 3 || r.Samples[2].Error != "http_503" || r.Samples[1].Server.MinRTT != -1 {
		t.Errorf("example decoded to %+v", r)
	}
}

// protocolExample is the example report in PROTOCOL.md.
func protocolExample(t testing.TB) []byte {
	t.Helper()
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("PROTOCOL.md has no ```json example")
	}
	return []byte(example)
}

// Decoders running at once never see each other's values: the backing
// arrays are reused across reports, one report at a time.
func TestDecodeConcurrentReuse(t *testing.T) {
	a, b := validReport(), validReport()
	b["site"] = "other"
	bodies := [][]byte{marshal(t, a), marshal(t, b)}
	want := make([]*Report, 2)
	for i, body := range bodies {
		r, err := Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = r
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 200 {
				i := g % 2
				r, err := Decode(bodies[i])
				if err != nil || !reflect.DeepEqual(r, want[i]) {
					t.Errorf("concurrent decode %d differs: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// ValidExtra accepts what the decoder stores as Params.Extra and nothing
// that could leave a report's SQL string.
func TestValidExtra(t *testing.T) {
	withDesignParams(t)
	const own = `"b":0,"n":3,"ord":"h2first","trg":"load","w":2`
	body := strings.Replace(string(marshal(t, validReport())), `"par":{`+own+`}`, `"par":{`+own+`,"zpause":60,"zgap":1000}`, 1)
	r, err := Decode([]byte(body))
	if err != nil || r.Params.Extra == "" || !ValidExtra(r.Params.Extra) {
		t.Fatalf("decoded Extra %q (%v) is not ValidExtra", r.Params.Extra, err)
	}
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"", true}, {"zgap=100", true}, {"a=1,b2=-30", true}, {"x=1234567890", true},
		{strings.Repeat("a=1,", 15) + "a=1", true}, {strings.Repeat("a=1,", 16) + "a=1", false},
		{"Gap=1", false}, {"gap", false}, {"gap=", false}, {"gap=-", false}, {"gap=1.5", false}, {"gap=+1", false},
		{"gap=12345678901", false}, {"gap=1' OR '1", false}, {",", false}, {"gap=1,", false}, {"x_2=1", false},
		{"=1", false}, {"gap=1=2", false}, {"abcdefghijklmnopq=1", false},
	} {
		if got := ValidExtra(tc.s); got != tc.want {
			t.Errorf("ValidExtra(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
