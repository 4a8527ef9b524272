package nel

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// chromiumUpload is an upload as Chromium 156 sends it (captured from a
// real browser): a success report, a 404 and a report of another type.
const chromiumUpload = `[{"age":55,"body":{"elapsed_time":6,"method":"GET","phase":"application","protocol":"h2",` +
	`"referrer":"https://shop.example/cart?id=7","sampling_fraction":1.0,"server_ip":"127.0.0.1","status_code":404,` +
	`"type":"http.error"},"type":"network-error","url":"https://h3.rum.example:8443/missing?secret=1",` +
	`"user_agent":"Mozilla/5.0 HeadlessChrome/156.0.0.0"},` +
	`{"age":2,"body":{"elapsed_time":30,"method":"GET","phase":"application","protocol":"h3","referrer":"",` +
	`"sampling_fraction":0.01,"server_ip":"::ffff:192.0.2.1","status_code":204,"type":"ok"},"type":"network-error",` +
	`"url":"https://h3.rum.example/probe?x=1","user_agent":"UA"},` +
	`{"age":0,"body":{"id":"x","message":"m"},"type":"deprecation","url":"https://shop.example/","user_agent":"UA"}]`

func TestDecodeChromiumUpload(t *testing.T) {
	b, err := Decode([]byte(chromiumUpload))
	if err != nil {
		t.Fatal(err)
	}
	if b.Ignored != 1 || len(b.Reports) != 2 {
		t.Fatalf("kept %d, ignored %d; want 2 and 1", len(b.Reports), b.Ignored)
	}
	want := []Report{
		{Origin: "https://h3.rum.example:8443", PageOrigin: "https://shop.example", AgeMS: 55, Type: "http.error",
			Phase: "application", Protocol: "h2", Method: "GET", StatusCode: 404, ElapsedMS: 6, ServerIP: "127.0.0.1", SamplingFraction: 1},
		{Origin: "https://h3.rum.example", Probe: true, AgeMS: 2, Type: "ok", Phase: "application", Protocol: "h3",
			Method: "GET", StatusCode: 204, ElapsedMS: 30, ServerIP: "192.0.2.1", SamplingFraction: 0.01},
	}
	for i := range want {
		if b.Reports[i] != want[i] {
			t.Errorf("report %d:\n got %+v\nwant %+v", i, b.Reports[i], want[i])
		}
	}
	// Nothing of a path, query or user agent survives into what is kept.
	enc, err := Encode(b.Reports)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"missing", "secret", "cart", "id=7", "HeadlessChrome", "x=1"} {
		if strings.Contains(string(enc), s) {
			t.Errorf("spooled form %s keeps %q", enc, s)
		}
	}
	back, err := DecodeSpooled(enc)
	if err != nil || len(back) != 2 || back[0] != want[0] || back[1] != want[1] {
		t.Errorf("spooled form does not read back: %+v, %v", back, err)
	}
}

// report builds a network-error report with body members changed by kv
// (a nil value deletes the member).
func report(top map[string]any, body map[string]any) map[string]any {
	b := map[string]any{"elapsed_time": 12, "method": "GET", "phase": "connection", "protocol": "",
		"referrer": "", "sampling_fraction": 1, "server_ip": "", "status_code": 0, "type": "tcp.refused"}
	for k, v := range body {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	r := map[string]any{"age": 10, "body": b, "type": "network-error", "url": "https://h2.rum.example:8444/probe"}
	for k, v := range top {
		if v == nil {
			delete(r, k)
		} else {
			r[k] = v
		}
	}
	return r
}

func upload(t *testing.T, reports ...any) string {
	t.Helper()
	b, err := json.Marshal(reports)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecode(t *testing.T) {
	many := make([]any, MaxReports+1)
	for i := range many {
		many[i] = report(nil, nil)
	}
	deep := strings.Repeat("[", 20) + strings.Repeat("]", 20)
	for _, tc := range []struct {
		name, in string
		reason   string // "" accepts
		kept     int
		ignored  int
		check    func(*testing.T, []Report)
	}{
		{name: "tcp refused", in: upload(t, report(nil, nil)), kept: 1, check: func(t *testing.T, r []Report) {
			if r[0].Type != "tcp.refused" || r[0].Phase != PhaseConnection || r[0].Protocol != "" || r[0].StatusCode != 0 ||
				r[0].Origin != "https://h2.rum.example:8444" || !r[0].Probe || !r[0].Failed() {
				t.Errorf("%+v", r[0])
			}
		}},
		{name: "only other types", in: upload(t, map[string]any{"type": "csp-violation", "url": "https://a.example/", "age": 0,
			"body": map[string]any{"blockedURL": "x"}}), ignored: 1},
		{name: "future members ignored", in: upload(t, report(map[string]any{"attempts": 2},
			map[string]any{"request_headers": map[string]any{"x": []string{"y"}}})), kept: 1},
		{name: "default port dropped, ipv6 server", in: upload(t, report(map[string]any{"url": "https://H3.Rum.Example:443/a"},
			map[string]any{"server_ip": "2001:db8::1"})), kept: 1, check: func(t *testing.T, r []Report) {
			if r[0].Origin != "https://h3.rum.example" || r[0].ServerIP != "2001:db8::1" || r[0].Probe {
				t.Errorf("%+v", r[0])
			}
		}},
		{name: "fraction weights", in: upload(t, report(nil, map[string]any{"sampling_fraction": 0.25})), kept: 1,
			check: func(t *testing.T, r []Report) {
				if r[0].SamplingFraction != 0.25 {
					t.Errorf("%+v", r[0])
				}
			}},
		{name: "smallest fraction", in: upload(t, report(nil, map[string]any{"sampling_fraction": MinSamplingFraction})), kept: 1},

		{name: "empty body", in: ``, reason: ReasonJSON},
		{name: "object not array", in: `{"type":"network-error"}`, reason: ReasonShape},
		{name: "trailing garbage", in: upload(t, report(nil, nil)) + `x`, reason: ReasonJSON},
		{name: "two values", in: `[] []`, reason: ReasonJSON},
		{name: "empty array", in: `[]`, reason: ReasonEmpty},
		{name: "not utf-8", in: "[\"\xff\"]", reason: ReasonEncoding},
		{name: "too deep", in: deep, reason: ReasonTooDeep},
		{name: "too many", in: upload(t, many...), reason: ReasonTooMany},
		{name: "too large", in: `[` + strings.Repeat(" ", MaxBodyBytes) + `]`, reason: ReasonSize},
		{name: "element not object", in: `[1]`, reason: ReasonShape},
		{name: "no type", in: upload(t, report(map[string]any{"type": nil}, nil)), reason: ReasonField},
		{name: "type not string", in: upload(t, report(map[string]any{"type": 5}, nil)), reason: ReasonField},
		{name: "no url", in: upload(t, report(map[string]any{"url": nil}, nil)), reason: ReasonField},
		{name: "no age", in: upload(t, report(map[string]any{"age": nil}, nil)), reason: ReasonField},
		{name: "negative age", in: upload(t, report(map[string]any{"age": -1}, nil)), reason: ReasonValue},
		{name: "fractional age", in: upload(t, report(map[string]any{"age": 1.5}, nil)), reason: ReasonValue},
		{name: "huge age", in: upload(t, report(map[string]any{"age": 1e300}, nil)), reason: ReasonValue},
		{name: "body missing", in: upload(t, report(map[string]any{"body": nil}, nil)), reason: ReasonField},
		{name: "body null", in: `[{"type":"network-error","url":"https://a.example/","age":0,"body":null}]`, reason: ReasonField},
		{name: "body array", in: upload(t, report(map[string]any{"body": []int{1}}, nil)), reason: ReasonField},
		{name: "http url", in: upload(t, report(map[string]any{"url": "http://a.example/"}, nil)), reason: ReasonURL},
		{name: "relative url", in: upload(t, report(map[string]any{"url": "/probe"}, nil)), reason: ReasonURL},
		{name: "url with user", in: upload(t, report(map[string]any{"url": "https://u:p@a.example/"}, nil)), reason: ReasonURL},
		{name: "url bad port", in: upload(t, report(map[string]any{"url": "https://a.example:99999999/"}, nil)), reason: ReasonURL},
		{name: "body no type", in: upload(t, report(nil, map[string]any{"type": nil})), reason: ReasonField},
		{name: "body bad type", in: upload(t, report(nil, map[string]any{"type": "TCP REFUSED"})), reason: ReasonValue},
		{name: "body no phase", in: upload(t, report(nil, map[string]any{"phase": nil})), reason: ReasonField},
		{name: "body bad phase", in: upload(t, report(nil, map[string]any{"phase": "transport"})), reason: ReasonValue},
		{name: "body no elapsed", in: upload(t, report(nil, map[string]any{"elapsed_time": nil})), reason: ReasonField},
		{name: "elapsed string", in: upload(t, report(nil, map[string]any{"elapsed_time": "12"})), reason: ReasonField},
		{name: "elapsed negative", in: upload(t, report(nil, map[string]any{"elapsed_time": -3})), reason: ReasonValue},
		{name: "elapsed too long", in: upload(t, report(nil, map[string]any{"elapsed_time": MaxElapsedMS + 1})), reason: ReasonValue},
		{name: "no fraction", in: upload(t, report(nil, map[string]any{"sampling_fraction": nil})), reason: ReasonField},
		{name: "zero fraction", in: upload(t, report(nil, map[string]any{"sampling_fraction": 0})), reason: ReasonValue},
		{name: "fraction over 1", in: upload(t, report(nil, map[string]any{"sampling_fraction": 1.5})), reason: ReasonValue},
		// A report under a fraction no policy publishes would weigh as many
		// requests as its sender likes, up to +Inf for a denormal.
		{name: "denormal fraction", in: upload(t, report(nil, map[string]any{"sampling_fraction": 5e-324})), reason: ReasonValue},
		{name: "tiny fraction", in: upload(t, report(nil, map[string]any{"sampling_fraction": 1e-300})), reason: ReasonValue},
		{name: "fraction below a policy's step", in: upload(t, report(nil, map[string]any{"sampling_fraction": 9e-7})), reason: ReasonValue},
		{name: "negative fraction", in: upload(t, report(nil, map[string]any{"sampling_fraction": -0.5})), reason: ReasonValue},
		{name: "status out of range", in: upload(t, report(nil, map[string]any{"status_code": 1000})), reason: ReasonValue},
		{name: "status string", in: upload(t, report(nil, map[string]any{"status_code": "404"})), reason: ReasonField},
		{name: "bad protocol", in: upload(t, report(nil, map[string]any{"protocol": "h2 <script>"})), reason: ReasonValue},
		{name: "bad method", in: upload(t, report(nil, map[string]any{"method": "GET /x"})), reason: ReasonValue},
		{name: "bad server ip", in: upload(t, report(nil, map[string]any{"server_ip": "localhost"})), reason: ReasonValue},
		{name: "zoned server ip", in: upload(t, report(nil, map[string]any{"server_ip": "fe80::1%eth0"})), reason: ReasonValue},
		{name: "one bad report refuses the upload", in: upload(t, report(nil, nil), report(nil, map[string]any{"phase": "x"})),
			reason: ReasonValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Decode([]byte(tc.in))
			if tc.reason != "" {
				de, ok := errors.AsType[*DecodeError](err)
				if !ok || de.Reason != tc.reason {
					t.Fatalf("error %v, want reason %s", err, tc.reason)
				}
				if strings.ContainsAny(de.Error(), "\n\r") {
					t.Errorf("error is not one line: %q", de.Error())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Reports) != tc.kept || b.Ignored != tc.ignored {
				t.Fatalf("kept %d ignored %d, want %d and %d", len(b.Reports), b.Ignored, tc.kept, tc.ignored)
			}
			if tc.check != nil {
				tc.check(t, b.Reports)
			}
		})
	}
}

func TestProto(t *testing.T) {
	for in, want := range map[string]string{
		"h3": "h3", "h3-29": "h3", "H3-Q050": "h3", "hq": "h3", "http/2+quic/43": "h3", "quic/1+spdy/3": "h3",
		"h2": "h2", "http/2": "h2", "http/1.1": "h1", "http/1.0": "h1", "": "unknown", "spdy/3": "unknown",
	} {
		if got := Proto(in); got != want {
			t.Errorf("Proto(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzDecode checks that Decode never panics, that every error is a
// *DecodeError with a known reason, and that what it keeps holds the
// invariants the store relies on: origins only, values in range.
// Run: go test ./ingest/nel -run '^$' -fuzz FuzzDecode -fuzztime 30s
func FuzzDecode(f *testing.F) {
	f.Add([]byte(chromiumUpload))
	for _, s := range []string{``, `[]`, `{}`, `[{}]`, `[null]`, `[{"type":"network-error"}]`,
		`[{"type":"network-error","url":"https://a.example/","age":0,"body":{"type":"ok","phase":"application","elapsed_time":1,"sampling_fraction":1}}]`} {
		f.Add([]byte(s))
	}
	reasons := map[string]bool{}
	for _, r := range DecodeReasons() {
		reasons[r] = true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(data)
		if err != nil {
			de, ok := errors.AsType[*DecodeError](err)
			if !ok || !reasons[de.Reason] {
				t.Fatalf("error %v (%T) has no known reason", err, err)
			}
			if b != nil {
				t.Fatal("batch returned with an error")
			}
			return
		}
		if len(b.Reports)+b.Ignored == 0 || len(b.Reports)+b.Ignored > MaxReports {
			t.Fatalf("%d reports kept, %d ignored", len(b.Reports), b.Ignored)
		}
		for _, r := range b.Reports {
			if !strings.HasPrefix(r.Origin, "https://") || strings.ContainsAny(r.Origin[len("https://"):], "/?#@") {
				t.Fatalf("origin %q", r.Origin)
			}
			if r.PageOrigin != "" && strings.ContainsAny(r.PageOrigin[strings.Index(r.PageOrigin, "//")+2:], "/?#@") {
				t.Fatalf("page origin %q", r.PageOrigin)
			}
			if !(r.SamplingFraction >= MinSamplingFraction && r.SamplingFraction <= 1) || r.ElapsedMS < 0 || r.ElapsedMS > MaxElapsedMS ||
				r.AgeMS < 0 || r.AgeMS > MaxAgeMS || r.StatusCode < 0 || r.StatusCode > 999 {
				t.Fatalf("value out of range: %+v", r)
			}
			if Proto(r.Protocol) == "" {
				t.Fatalf("protocol %q", r.Protocol)
			}
		}
		enc, err := Encode(b.Reports)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeSpooled(enc)
		if err != nil || len(back) != len(b.Reports) {
			t.Fatalf("spooled form does not read back: %v", err)
		}
		for i := range back {
			if back[i] != b.Reports[i] {
				t.Fatalf("spooled report %d: %+v, was %+v", i, back[i], b.Reports[i])
			}
		}
	})
}
