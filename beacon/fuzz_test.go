package beacon

import (
	"encoding/json"
	"errors"
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
	for _, s := range []string{``, `{}`, `{"v":1}`, `{"v":2}`, `[]`, `{"v":1,"s":[{}]}`, `{"V":1}`, `null`,
		`{"v":1,"id":"00112233445566778899aabbccddeeff","site":"s","o":"null","bv":"1","p":true,"mt":0,` +
			`"par":{"n":1,"w":0,"b":0,"ord":"h3first","trg":"manual"},"s":[{"q":0,"ph":"w","w":"h2","g":"h2",` +
			`"st":0,"d":-1,"dns":-1,"con":-1,"tls":-1,"tf":-1,"dl":-1,"r":false,"ts":0}]}`} {
		f.Add([]byte(s))
	}
	reasons := map[string]bool{}
	for _, r := range DecodeReasons() {
		reasons[r] = true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || !reasons[de.Reason] {
				t.Fatalf("error %v (%T) has no known reason", err, err)
			}
			if r != nil {
				t.Fatal("report returned with an error")
			}
			return
		}
		total := r.Params.Warmup + 1 + 2*r.Params.Parallel
		if len(r.Samples) == 0 || len(r.Samples) > total || len(r.Samples) > MaxSamples {
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
		// An accepted report holds no NaN or Inf (it marshals).
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
