package beacon

import "testing"

func TestCollectorOf(t *testing.T) {
	for cid, want := range map[string]string{
		"fra-1.c38a33d8-2f":                    "fra-1",
		"c38a33d8-2f":                          "",
		".c38a33d8-2f":                         "",
		"FRA.c38a33d8-2f":                      "",
		"a b.c38a33d8":                         "",
		"":                                     "",
		"x.y.z":                                "x",
		"abcdefghijklmnopqrstuvwxyz0123456.c1": "",
	} {
		if got := CollectorOf(cid); got != want {
			t.Errorf("CollectorOf(%q) = %q, want %q", cid, got, want)
		}
	}
}
