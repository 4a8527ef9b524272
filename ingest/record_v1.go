package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
)

// Version 1 spool records, written by releases before the spool kept wire
// bytes, are still read so that a spool left by such a release replays
// after an upgrade. The format is frozen: the report and its enrichment as
// varints, float32 bits and length-prefixed strings, floats already rounded
// to the Float32 columns.

// maxRecordSamples bounds the sample count a record may claim, so a damaged
// record cannot make the decoder allocate without limit.
const maxRecordSamples = 1024

var errShortRecord = errors.New("record ends early")

type recordReader struct {
	b   []byte
	err error
}

func (r *recordReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *recordReader) uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errShortRecord)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) int() int {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(errShortRecord)
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *recordReader) f32() float64 {
	if len(r.b) < 4 {
		r.fail(errShortRecord)
		return 0
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(r.b))
	r.b = r.b[4:]
	return float64(v)
}

func (r *recordReader) str() string {
	n := r.uint()
	if n > uint64(len(r.b)) {
		r.fail(errShortRecord)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *recordReader) flag() bool {
	if len(r.b) < 1 {
		r.fail(errShortRecord)
		return false
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v != 0
}

// decodeRecordV1 parses the body of a version 1 record (after its
// version number).
func decodeRecordV1(b []byte) (store.Run, error) {
	r := recordReader{b: b}
	var run store.Run
	rep := &beacon.Report{}
	run.Report = rep
	run.Received = time.Unix(0, int64(r.int())).UTC()
	rep.Version = r.int()
	if len(r.b) < 16 {
		r.fail(errShortRecord)
	} else {
		copy(rep.RunID[:], r.b)
		r.b = r.b[16:]
	}
	rep.Site = r.str()
	rep.PageOrigin = r.str()
	rep.BeaconVersion = r.str()
	rep.Partial = r.flag()
	rep.MainThreadMS = r.f32()
	rep.Params.Parallel = r.int()
	rep.Params.Warmup = r.int()
	rep.Params.Bytes = r.int()
	rep.Params.Order = r.str()
	rep.Params.Trigger = r.str()
	rep.Client.Platform = r.str()
	rep.Client.Mobile = r.flag()
	rep.Client.EffectiveType = r.str()
	rep.Client.RTT = r.f32()
	rep.Client.Downlink = r.f32()
	rep.Client.Webdriver = r.flag()
	run.Geo.Continent = r.str()
	run.Geo.Country = r.str()
	run.Geo.Subdivision = r.str()
	run.Geo.CityID = uint32(r.uint())
	run.Geo.ASN = uint32(r.uint())
	run.Geo.ASOrg = r.str()
	run.Browser = r.str()
	run.BrowserMajor = r.int()
	run.Bot = r.flag()
	n := r.uint()
	if n > maxRecordSamples {
		return store.Run{}, fmt.Errorf("decoding spool record: %d samples", n)
	}
	if r.err == nil && n > 0 {
		rep.Samples = make([]beacon.Sample, n)
	}
	for i := 0; r.err == nil && i < int(n); i++ {
		s := &rep.Samples[i]
		s.Seq = r.int()
		s.Phase = beacon.Phase(r.str())
		s.Want = beacon.Proto(r.str())
		s.Got = beacon.Proto(r.str())
		for _, p := range [...]*float64{&s.Start, &s.Duration, &s.DNS, &s.Connect, &s.TLS, &s.TTFB, &s.Download} {
			*p = r.f32()
		}
		s.Reused = r.flag()
		s.TransferSize = r.int()
		s.Error = r.str()
		s.Server = beacon.NoServerTiming() // what version 1 predates stays unsent (age)
		st := &s.Server
		st.Present = r.flag()
		st.Proto = beacon.Proto(r.str())
		for _, p := range [...]*float64{&st.Handle, &st.RTT, &st.MinRTT, &st.RTTVar} {
			*p = r.f32()
		}
		st.Lost = r.int()
		st.ConnID = r.str()
		st.ConnReqs = r.int()
		st.Resumed = r.flag()
		st.EarlyData = r.flag()
	}
	if r.err != nil {
		return store.Run{}, fmt.Errorf("decoding spool record: %w", r.err)
	}
	if len(r.b) != 0 {
		return store.Run{}, fmt.Errorf("decoding spool record: %d trailing bytes", len(r.b))
	}
	return run, nil
}
