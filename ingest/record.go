package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/h3rum/h3rum/beacon"
)

// Spool records hold what the samples table stores of a Run, in a compact
// binary form: varints, float32 bits (the columns are Float32), and
// length-prefixed strings. The client address, User-Agent and CDN header
// are not written: the address must never reach the disk, and the others are
// already folded into the enrichment.
const recordVersion = 1

// maxRecordSamples bounds the sample count a record may claim, so a damaged
// record cannot make the decoder allocate without limit.
const maxRecordSamples = 1024

type recordWriter struct{ b []byte }

func (w *recordWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *recordWriter) int(v int)     { w.b = binary.AppendVarint(w.b, int64(v)) }
func (w *recordWriter) f32(v float64) {
	w.b = binary.LittleEndian.AppendUint32(w.b, math.Float32bits(float32(v)))
}
func (w *recordWriter) str(s string)   { w.uint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *recordWriter) flag(v bool)    { w.b = append(w.b, b2u(v)) }
func (w *recordWriter) bytes(p []byte) { w.b = append(w.b, p...) }

func b2u(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// appendRecord appends the record form of run to b.
func appendRecord(b []byte, run *Run) []byte {
	w := recordWriter{b}
	w.uint(recordVersion)
	w.int(int(run.Received.UnixNano()))
	rep := run.Report
	if rep == nil {
		rep = &beacon.Report{}
	}
	w.int(rep.Version)
	w.bytes(rep.RunID[:])
	w.str(rep.Site)
	w.str(rep.PageOrigin)
	w.str(rep.BeaconVersion)
	w.flag(rep.Partial)
	w.f32(rep.MainThreadMS)
	w.int(rep.Params.Parallel)
	w.int(rep.Params.Warmup)
	w.int(rep.Params.Bytes)
	w.str(rep.Params.Order)
	w.str(rep.Params.Trigger)
	w.str(rep.Client.Platform)
	w.flag(rep.Client.Mobile)
	w.str(rep.Client.EffectiveType)
	w.f32(rep.Client.RTT)
	w.f32(rep.Client.Downlink)
	w.flag(rep.Client.Webdriver)
	g := run.Geo
	w.str(g.Continent)
	w.str(g.Country)
	w.str(g.Subdivision)
	w.uint(uint64(g.CityID))
	w.uint(uint64(g.ASN))
	w.str(g.ASOrg)
	w.str(run.Browser)
	w.int(run.BrowserMajor)
	w.flag(run.Bot)
	w.uint(uint64(len(rep.Samples)))
	for i := range rep.Samples {
		s := &rep.Samples[i]
		w.int(s.Seq)
		w.str(string(s.Phase))
		w.str(string(s.Want))
		w.str(string(s.Got))
		for _, v := range [...]float64{s.Start, s.Duration, s.DNS, s.Connect, s.TLS, s.TTFB, s.Download} {
			w.f32(v)
		}
		w.flag(s.Reused)
		w.int(s.TransferSize)
		w.str(s.Error)
		st := &s.Server
		w.flag(st.Present)
		w.str(string(st.Proto))
		for _, v := range [...]float64{st.Handle, st.RTT, st.MinRTT, st.RTTVar} {
			w.f32(v)
		}
		w.int(st.Lost)
		w.str(st.ConnID)
		w.int(st.ConnReqs)
		w.flag(st.Resumed)
		w.flag(st.EarlyData)
	}
	return w.b
}

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

// decodeRecord parses a record written by appendRecord.
func decodeRecord(b []byte) (Run, error) {
	r := recordReader{b: b}
	if v := r.uint(); r.err == nil && v != recordVersion {
		return Run{}, fmt.Errorf("decoding spool record: unknown version %d", v)
	}
	var run Run
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
		return Run{}, fmt.Errorf("decoding spool record: %d samples", n)
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
		return Run{}, fmt.Errorf("decoding spool record: %w", r.err)
	}
	if len(r.b) != 0 {
		return Run{}, fmt.Errorf("decoding spool record: %d trailing bytes", len(r.b))
	}
	return run, nil
}
