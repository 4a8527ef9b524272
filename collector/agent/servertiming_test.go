package agent

import (
	"testing"

	"github.com/h3rum/h3rum/beacon"
)

func TestParseServerTiming(t *testing.T) {
	full := noServerTiming
	full.Present, full.Proto, full.Handle, full.RTT, full.MinRTT, full.RTTVar = true, beacon.ProtoH3, 0.012, 0.105, 0.05, 0.02
	full.Lost, full.ConnID, full.ConnReqs, full.ConnAge, full.Resumed, full.EarlyData = 0, "fra-1.1a2b3c4d-1f", 3, 812.4, true, false
	with := func(f func(*beacon.ServerTiming)) beacon.ServerTiming {
		st := noServerTiming
		st.Present = true
		f(&st)
		return st
	}
	for _, tc := range []struct {
		name   string
		values []string
		want   beacon.ServerTiming
	}{
		{"absent", nil, noServerTiming},
		{"the collector's", []string{"proto;desc=h3,app;dur=0.012,rtt;dur=0.105,minrtt;dur=0.05,rttvar;dur=0.02,lost;desc=0,cid;desc=fra-1.1a2b3c4d-1f,creq;desc=3,age;dur=812.4,resumed;desc=1,early;desc=0"}, full},
		{"split over fields, spaces, quotes", []string{`proto;desc="h2", app; dur=1.5`, `cid;desc="a,b;c"`},
			with(func(st *beacon.ServerTiming) { st.Proto, st.Handle, st.ConnID = beacon.ProtoH2, 1.5, "a,b;c" })},
		{"normalised proto", []string{"proto;desc=HTTP/1.1"}, with(func(st *beacon.ServerTiming) { st.Proto = beacon.ProtoH1 })},
		{"h3 draft", []string{"proto;desc=h3-29"}, with(func(st *beacon.ServerTiming) { st.Proto = beacon.ProtoH3 })},
		{"rounded to 1 µs", []string{"rtt;dur=1.23456"}, with(func(st *beacon.ServerTiming) { st.RTT = 1.235 })},
		{"first parameter wins", []string{"app;dur=1;dur=2"}, with(func(st *beacon.ServerTiming) { st.Handle = 1 })},
		{"unknown metrics only", []string{"cdn-cache;desc=HIT,total;dur=5"}, noServerTiming},
		{"values the format refuses are left out", []string{
			"app;dur=-1,rtt;dur=NaN,minrtt;dur=4000000,rttvar,lost;desc=-2,creq;desc=0,resumed;desc=2,early;desc=x,cid;desc=\"a b\",age;desc=5,proto",
		}, noServerTiming},
		{"counts of up to 9 digits", []string{"lost;desc=999999999,creq;desc=1234567890"}, with(func(st *beacon.ServerTiming) { st.Lost = 999999999 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseServerTiming(tc.values); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
