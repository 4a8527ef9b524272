package beacon

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeHandshakes(t *testing.T) {
	const ok = `{"q":0,"ph":"h","w":"h3","g":"h3","st":1,"d":21.2,"dns":0,"con":10.4,"tls":10.4,"tf":10.1,"dl":0.2,"r":false,"ts":310,"sv":{"proto":"h3","resumed":1,"early":1}}`
	many := "[" + strings.Repeat(ok+",", MaxHandshakes) + ok + "]"
	for _, tc := range []struct {
		name, in, reason string
		n                int
	}{
		{"one", "[" + ok + "]", "", 1},
		{"absent", "", "", 0},
		{"null", "null", "", 0},
		{"empty", "[]", "", 0},
		{"two", "[" + ok + "," + strings.Replace(ok, `"q":0`, `"q":1`, 1) + "]", "", 2},
		{"duplicate seq", "[" + ok + "," + ok + "]", ReasonValue, 0},
		{"seq too big", "[" + strings.Replace(ok, `"q":0`, `"q":16`, 1) + "]", ReasonValue, 0},
		{"too many", many, ReasonLimit, 0},
		{"parallel phase", "[" + strings.Replace(ok, `"ph":"h"`, `"ph":"p"`, 1) + "]", ReasonValue, 0},
		{"h1 origin", "[" + strings.Replace(ok, `"w":"h3"`, `"w":"h1"`, 1) + "]", ReasonValue, 0},
		{"reused", "[" + strings.Replace(ok, `"r":false`, `"r":true`, 1) + "]", ReasonValue, 0},
		{"negative duration", "[" + strings.Replace(ok, `"d":21.2`, `"d":-3`, 1) + "]", ReasonValue, 0},
		{"unknown key", "[" + strings.Replace(ok, `"q":0`, `"q":0,"x":1`, 1) + "]", ReasonField, 0},
		{"duplicate key", "[" + strings.Replace(ok, `"q":0`, `"q":0,"q":1`, 1) + "]", ReasonField, 0},
		{"mis-cased key", "[" + strings.Replace(ok, `"q":0`, `"Q":0`, 1) + "]", ReasonField, 0},
		{"missing key", "[" + strings.Replace(ok, `"ts":310,`, ``, 1) + "]", ReasonField, 0},
		{"not an array", ok, ReasonField, 0},
		{"trailing data", "[" + ok + "] 1", ReasonJSON, 0},
		{"too large", "[" + strings.Repeat(" ", MaxReportBytes) + "]", ReasonSize, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeHandshakes([]byte(tc.in))
			if tc.reason != "" {
				var de *DecodeError
				if !errors.As(err, &de) || de.Reason != tc.reason {
					t.Fatalf("err %v, want reason %s", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.n {
				t.Fatalf("%d samples, want %d", len(got), tc.n)
			}
			for _, s := range got {
				if s.Phase != PhaseHandshake || s.Want != ProtoH3 || !s.Server.Resumed || !s.Server.EarlyData || s.Connect != 10.4 {
					t.Errorf("decoded %+v", s)
				}
			}
		})
	}
}
