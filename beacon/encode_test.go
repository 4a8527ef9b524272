package beacon

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/h3rum/h3rum/beacon/beacontest"
)

// roundTrip encodes r, checks that Decode reads back r, and returns the
// bytes.
func roundTrip(t *testing.T, r *Report) []byte {
	t.Helper()
	b, err := Encode(r)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(Encode(r)): %v\n%s", err, b)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("Decode(Encode(r)) differs from r\n got %+v\nwant %+v\nwire %s", got, r, b)
	}
	return b
}

func TestEncodeRoundTrip(t *testing.T) {
	noClient := validReport()
	delete(noClient, "c")
	partial := validReport()
	partial["p"] = true
	partial["s"] = partial["s"].([]any)[:4]
	sparse := validReport() // server timing with most metrics absent, an error, no Server-Timing
	sampleAt(sparse, 3)["sv"] = map[string]any{"cid": "x"}
	sampleAt(sparse, 4)["e"] = "http_503"
	delete(sampleAt(sparse, 5), "sv")
	sampleAt(sparse, 6)["d"] = -1
	unicode := validReport()
	unicode["o"] = "https://bücher.example"
	for _, tc := range []struct {
		name  string
		wire  []byte
		ascii bool // the output must take Decode's fast path
	}{
		{"valid", marshal(t, validReport()), true},
		{"protocol example", protocolExample(t), true},
		{"beacontest", beacontest.Report(beacontest.Run{ID: "0123456789abcdef0123456789abcdef"}), true},
		{"no client", marshal(t, noClient), true},
		{"partial", marshal(t, partial), true},
		{"sparse", marshal(t, sparse), true},
		{"non-ASCII origin", marshal(t, unicode), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Decode(tc.wire)
			if err != nil {
				t.Fatal(err)
			}
			b := roundTrip(t, r)
			if _, ok := fastDecode(b, arenas.Get().(*arena)); ok != tc.ascii {
				t.Errorf("fast path took it: %v, want %v\n%s", ok, tc.ascii, b)
			}
		})
	}
}

// genReport returns a random valid report: every optional field present
// or absent, numbers with 3 decimals (what clients send) or at full float
// precision, any parameters and order, complete or partial.
func genReport(rng *rand.Rand) *Report {
	dur := func(unknownOK bool) float64 {
		switch rng.IntN(5) {
		case 0:
			if unknownOK {
				return -1
			}
			return 0
		case 1:
			return rng.Float64() * 100 // full precision
		case 2:
			return float64(rng.IntN(MaxDurationMS + 1))
		}
		return math.Round(rng.Float64()*1e6) / 1e3
	}
	text := func(set string, n int) string {
		b := make([]byte, 1+rng.IntN(n))
		for i := range b {
			b[i] = set[rng.IntN(len(set))]
		}
		return string(b)
	}
	const token = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_+!#$%&'()*/:;<=>?@[]^`{|}~"
	protos := []Proto{ProtoUnknown, ProtoH1, ProtoH2, ProtoH3}
	r := &Report{Version: Version, Site: text("abcXYZ019._-", 64), PageOrigin: "null", BeaconVersion: text("0123456789.+abc", 32),
		Partial: rng.IntN(3) == 0, MainThreadMS: math.Round(rng.Float64()*MaxMainThread*1e3) / 1e3,
		Params: Params{Parallel: 1 + rng.IntN(MaxParallel), Warmup: rng.IntN(MaxWarmup + 1), Bytes: rng.IntN(MaxBytes + 1),
			Order: []string{"h2first", "h3first"}[rng.IntN(2)], Trigger: []string{"load", "manual"}[rng.IntN(2)]},
		Client: Client{RTT: -1, Downlink: -1}}
	if rng.IntN(4) == 0 {
		r.Version = MinVersion // an older script's report: alt not recorded
	} else {
		r.AltSvc = AltSvcNone + AltSvc(rng.IntN(int(MaxAltSvc)))
	}
	for i := range r.RunID {
		r.RunID[i] = byte(rng.Uint32())
	}
	if rng.IntN(2) == 0 {
		r.PageOrigin = "https://" + text("abcdefgh", 20) + ".example:8443"
	}
	if rng.IntN(4) > 0 {
		c := &r.Client
		for range rng.IntN(maxBrands + 1) {
			c.Brands = append(c.Brands, Brand{text(token+" ", 64), text("0123456789.", 32)})
		}
		if rng.IntN(2) == 0 {
			c.Platform = text(token, 32)
		}
		c.Mobile, c.Webdriver = rng.IntN(2) == 0, rng.IntN(2) == 0
		if rng.IntN(2) == 0 {
			c.EffectiveType = EffectiveTypes[rng.IntN(len(EffectiveTypes))]
		}
		if rng.IntN(2) == 0 {
			c.RTT = float64(rng.IntN(1e6))
		}
		if rng.IntN(2) == 0 {
			c.Downlink = rng.Float64() * 1e6
		}
	}
	p := r.Params
	total := p.Warmup + 1 + 2*p.Parallel
	seqs := rng.Perm(total) // any order
	if r.Partial {
		seqs = seqs[:1+rng.IntN(total)]
	}
	if rng.IntN(4) == 0 { // the script's own errors, and a run they cut short
		e := &r.ScriptErrors
		for _, n := range []*int{&e.Idle, &e.Warmup, &e.Batch, &e.Timing, &e.Send} {
			if rng.IntN(2) == 0 {
				*n = 1 + rng.IntN(MaxScriptErrors)
			}
		}
		if e.Total() > 0 {
			seqs = seqs[:rng.IntN(len(seqs)+1)]
		}
	}
	first, second := ProtoH3, ProtoH2
	if p.Order == "h2first" {
		first, second = second, first
	}
	r.Samples = []Sample{} // as Decode makes it, also for a run cut short before any
	for _, q := range seqs {
		s := Sample{Seq: q, Phase: PhaseParallel, Want: second, Got: protos[rng.IntN(4)], Start: dur(false),
			Duration: dur(true), DNS: dur(true), Connect: dur(true), TLS: dur(true), TTFB: dur(true), Download: dur(true),
			Reused: rng.IntN(2) == 0, TransferSize: rng.IntN(1<<30 + 1),
			Server: ServerTiming{Handle: -1, RTT: -1, MinRTT: -1, RTTVar: -1, ConnAge: -1, Proto: ProtoUnknown}}
		switch {
		case q < p.Warmup:
			s.Phase, s.Want = PhaseWarmup, ProtoH3
		case q == p.Warmup:
			s.Phase, s.Want = PhaseWarmup, ProtoH2
		case q <= p.Warmup+p.Parallel:
			s.Want = first
		}
		if rng.IntN(4) == 0 {
			s.Error = text("abcdefghijklmnopqrstuvwxyz0123456789_", 32)
		}
		if rng.IntN(4) > 0 {
			st := &s.Server
			st.Present = true
			st.Proto = protos[rng.IntN(4)]
			st.Handle, st.RTT, st.MinRTT, st.RTTVar, st.ConnAge = dur(true), dur(true), dur(true), dur(true), dur(true)
			st.Lost = rng.IntN(maxCount + 1)
			if rng.IntN(3) > 0 {
				st.ConnID = text(strings.ReplaceAll(token, "\\", ""), 64)
			}
			if rng.IntN(3) > 0 {
				st.ConnReqs = 1 + rng.IntN(maxCount)
			}
			st.Resumed, st.EarlyData = rng.IntN(2) == 0, rng.IntN(2) == 0
		}
		r.Samples = append(r.Samples, s)
	}
	return r
}

// Every valid report survives Encode then Decode, and its encoding takes
// the fast path.
func TestEncodeGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2026))
	for i := range 300 {
		r := genReport(rng)
		b := roundTrip(t, r)
		if _, ok := fastDecode(b, arenas.Get().(*arena)); !ok {
			t.Fatalf("report %d fell back to the general path:\n%s", i, b)
		}
	}
}

func TestEncodeInvalid(t *testing.T) {
	valid := func() *Report {
		r, err := Decode(marshal(t, validReport()))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		mutate func(r *Report)
		reason string // "" when the error is not a *DecodeError
	}{
		{"zero version", func(r *Report) { r.Version = 0 }, ReasonVersion},
		{"empty origin", func(r *Report) { r.PageOrigin = "" }, ReasonValue},
		{"bad site", func(r *Report) { r.Site = "a b" }, ReasonValue},
		{"no order", func(r *Report) { r.Params.Order = "" }, ReasonValue},
		{"negative duration", func(r *Report) { r.Samples[0].TTFB = -2 }, ReasonValue},
		{"unknown server duration", func(r *Report) { r.Samples[0].Server.RTT = -0.5 }, ReasonValue},
		{"handshake phase", func(r *Report) { r.Samples[0].Phase = PhaseHandshake }, ReasonValue},
		{"empty phase", func(r *Report) { r.Samples[0].Phase = "" }, ReasonValue},
		{"missing sample", func(r *Report) { r.Samples = r.Samples[1:] }, ReasonValue},
		{"NaN", func(r *Report) { r.Samples[2].Duration = math.NaN() }, ""},
		{"infinite rtt", func(r *Report) { r.Client.RTT = math.Inf(1) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			tc.mutate(r)
			encodeRefused(t, r, tc.reason)
		})
	}
}

// Params.Extra goes out as par's keys and reads back the same, on the fast
// path, so that a stored report replays as it came; text that is not the
// canonical form of the design parameters is an error, never a panic.
func TestEncodeDesignParams(t *testing.T) {
	withDesignParams(t)
	r, err := Decode(marshal(t, validReport()))
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range []string{"", "zgap=100", "zpause=0", "zgap=1,zpause=49", "zgap=1000,zpause=500"} {
		r.Params.Extra = extra
		b := roundTrip(t, r)
		if _, ok := fastDecode(b, arenas.Get().(*arena)); !ok {
			t.Errorf("Extra %q fell back to the general path:\n%s", extra, b)
		}
	}
	for _, tc := range []struct {
		extra  string
		reason string // "" when the error is not a *DecodeError
	}{
		{"zgap", ""}, {"zgap=", ""}, {"=1", ""}, {"=", ""}, {",", ""}, {"zgap=x", ""}, {"zgap=1.5", ""}, {"zgap=1=2", ""},
		{"zgap= 1", ""}, {"zgap=100,", ""}, {",zgap=100", ""}, {"zgap=100;zpause=1", ""}, {"zgap=99999999999999999999", ""},
		{"zzz=1", ""}, {"parallel=5", ""}, {"n=5", ""}, {"ZGAP=1", ""}, {`zgap":1,"zzz=1`, ""},
		{"zpause=60,zgap=100", ""}, {"zgap=0", ""}, {"zpause=50", ""}, {"zgap=0100", ""}, {"zgap=+5", ""}, {"zgap=-0", ""},
		{"zgap=1001", ReasonLimit}, {"zpause=-1", ReasonValue}, {"zgap=1,zgap=1", ReasonField},
	} {
		t.Run(tc.extra, func(t *testing.T) {
			r.Params.Extra = tc.extra
			encodeRefused(t, r, tc.reason)
		})
	}
}

func TestEncodeHandshakes(t *testing.T) {
	r, err := Decode(marshal(t, validReport()))
	if err != nil {
		t.Fatal(err)
	}
	// Five handshakes as the agent measures them, from the report's
	// samples: every field set, some Server-Timing absent or partial.
	var hs []Sample
	for i, want := range []Proto{ProtoH3, ProtoH3, ProtoH3, ProtoH2, ProtoH2} {
		s := r.Samples[3+i]
		s.Seq, s.Phase, s.Want, s.Got, s.Reused = i, PhaseHandshake, want, want, false
		hs = append(hs, s)
	}
	hs[1].Server = ServerTiming{Present: true, Proto: ProtoUnknown, Handle: -1, RTT: -1, MinRTT: -1, RTTVar: -1, ConnAge: -1, Resumed: true}
	hs[2].Error, hs[2].Duration = "timeout", -1
	hs[4].Server = ServerTiming{Handle: -1, RTT: -1, MinRTT: -1, RTTVar: -1, ConnAge: -1, Proto: ProtoUnknown}
	b, err := EncodeHandshakes(hs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHandshakes(b)
	if err != nil {
		t.Fatalf("DecodeHandshakes(EncodeHandshakes(hs)): %v\n%s", err, b)
	}
	if !reflect.DeepEqual(got, hs) {
		t.Errorf("round trip differs\n got %+v\nwant %+v", got, hs)
	}

	// Each element has exactly a report sample's keys, with "ph":"h".
	var elems []map[string]json.RawMessage
	if err := json.Unmarshal(b, &elems); err != nil {
		t.Fatal(err)
	}
	reportKeys := slices.Sorted(maps.Keys(sampleAt(validReport(), 0)))
	if keys := slices.Sorted(maps.Keys(elems[0])); !slices.Equal(keys, reportKeys) {
		t.Errorf("handshake keys %v, a report's sample has %v", keys, reportKeys)
	}
	if ph := string(elems[0]["ph"]); ph != `"h"` {
		t.Errorf("ph %s, want \"h\"", ph)
	}
	// A sample encodes as it does inside a report.
	r.Samples[3].Reused = false
	whole, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	one, err := EncodeHandshakes(hs[:1])
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(one[1:len(one)-1]), `"q":0,"ph":"h","w":"h3","g":"h3"`, `"q":3,"ph":"p","w":"h2","g":"h2"`, 1)
	if !strings.Contains(string(whole), body) {
		t.Errorf("handshake sample %s is not encoded as in the report\n%s", one, whole)
	}
	if b, err := EncodeHandshakes(nil); err != nil || string(b) != "[]" {
		t.Errorf("no handshakes: %s, %v", b, err)
	}

	for name, mutate := range map[string]func(*Sample){
		"parallel phase":    func(s *Sample) { s.Phase = PhaseParallel },
		"seq out of range":  func(s *Sample) { s.Seq = MaxHandshakes },
		"want h1":           func(s *Sample) { s.Want = ProtoH1 },
		"reused":            func(s *Sample) { s.Reused = true },
		"negative duration": func(s *Sample) { s.Connect = -3 },
		"bad error code":    func(s *Sample) { s.Error = "Timeout" },
		"bad cid":           func(s *Sample) { s.Server.ConnID = "a b" },
		"NaN":               func(s *Sample) { s.Start = math.NaN() },
	} {
		s := hs[0]
		mutate(&s)
		if b, err := EncodeHandshakes([]Sample{s}); err == nil {
			t.Errorf("%s: EncodeHandshakes accepted it: %s", name, b)
		}
	}
	dup := []Sample{hs[0], hs[0]}
	if b, err := EncodeHandshakes(dup); err == nil {
		t.Errorf("duplicate seq accepted: %s", b)
	}
}

// encodeRefused checks that Encode refuses r: with Decode's error of
// reason, or with an error of its own when reason is "".
func encodeRefused(t *testing.T, r *Report, reason string) {
	t.Helper()
	b, err := Encode(r)
	if err == nil {
		t.Fatalf("Encode accepted it:\n%s", b)
	}
	var de *DecodeError
	if errors.As(err, &de) != (reason != "") || de != nil && de.Reason != reason {
		t.Errorf("error %v (%T), want reason %q", err, err, reason)
	}
}
