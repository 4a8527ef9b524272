package store

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon"
)

// sampleColumns is the one definition of a samples row: every column's
// name, its ClickHouse type as the migrations leave it, and how a sample of
// a run fills it. The insert's column list and the columnar buffers are
// derived from it, and a test checks it against the migrated table. Adding
// a column is: a migration, a line here, and the decoder field it reads.
func sampleColumns() []column {
	type (
		r = *runRow
		s = *beacon.Sample
	)
	return []column{
		runCol("time", "DateTime('UTC')", func(r r) time.Time { return r.Received.UTC().Truncate(time.Second) }),
		runCol("site", "String", func(r r) string { return r.Report.Site }),
		runCol("source", sourceEnum, func(r r) int8 { return sourceValue(r.Source) }),
		runCol("run_id", "UUID", func(r r) uuid.UUID { return uuid.UUID(r.Report.RunID) }),
		col("seq", "UInt8", func(_ r, s s) uint8 { return storedSeq(s) }),
		col("phase", phaseEnum, func(_ r, s s) int8 { return phaseValue(s.Phase) }),
		col("want", protoEnum, func(_ r, s s) int8 { return protoValue(s.Want) }),
		col("got", protoEnum, func(_ r, s s) int8 { return protoValue(s.Got) }),
		col("outcome", outcomeEnum, func(_ r, s s) int8 { return int8(OutcomeOf(s.Want, s.Got)) }),
		runCol("exclusions", "UInt8", func(r r) uint8 { return uint8(r.exclusions) }),
		col("cold", "UInt8", func(r r, s s) uint8 { return b2u(s.Phase == beacon.PhaseParallel && r.cold.has(s.Seq)) }),
		col("start_ms", "Float32", func(_ r, s s) float32 { return float32(s.Start) }),
		col("duration_ms", "Float32", func(_ r, s s) float32 { return float32(s.Duration) }),
		col("dns_ms", "Float32", func(_ r, s s) float32 { return float32(s.DNS) }),
		col("connect_ms", "Float32", func(_ r, s s) float32 { return float32(s.Connect) }),
		col("tls_ms", "Float32", func(_ r, s s) float32 { return float32(s.TLS) }),
		col("ttfb_ms", "Float32", func(_ r, s s) float32 { return float32(s.TTFB) }),
		col("download_ms", "Float32", func(_ r, s s) float32 { return float32(s.Download) }),
		col("reused", "UInt8", func(_ r, s s) uint8 { return b2u(s.Reused) }),
		col("transfer_size", "UInt32", func(_ r, s s) uint32 { return clampU32(s.TransferSize) }),
		col("error", "String", func(_ r, s s) string { return s.Error }),
		col("srv_present", "UInt8", func(_ r, s s) uint8 { return b2u(s.Server.Present) }),
		col("srv_proto", protoEnum, func(_ r, s s) int8 { return protoValue(s.Server.Proto) }),
		col("srv_handle_ms", "Float32", func(_ r, s s) float32 { return float32(s.Server.Handle) }),
		col("srv_rtt_ms", "Float32", func(_ r, s s) float32 { return float32(s.Server.RTT) }),
		col("srv_min_rtt_ms", "Float32", func(_ r, s s) float32 { return float32(s.Server.MinRTT) }),
		col("srv_rttvar_ms", "Float32", func(_ r, s s) float32 { return float32(s.Server.RTTVar) }),
		col("srv_lost", "UInt32", func(_ r, s s) uint32 { return clampU32(s.Server.Lost) }),
		col("srv_conn_id", "String", func(_ r, s s) string { return s.Server.ConnID }),
		col("collector", "String", func(_ r, s s) string { return beacon.CollectorOf(s.Server.ConnID) }),
		col("srv_conn_reqs", "UInt32", func(_ r, s s) uint32 { return clampU32(s.Server.ConnReqs) }),
		col("srv_conn_age_ms", "Float32", func(_ r, s s) float32 { return float32(s.Server.ConnAge) }),
		col("srv_resumed", "UInt8", func(_ r, s s) uint8 { return b2u(s.Server.Resumed) }),
		col("srv_early", "UInt8", func(_ r, s s) uint8 { return b2u(s.Server.EarlyData) }),
		col("srv_retry", "UInt8", func(_ r, s s) uint8 { return b2u(s.Server.Retry) }),
		runCol("partial", "UInt8", func(r r) uint8 { return b2u(r.Report.Partial) }),
		runCol("script_errors_idle", "UInt16", func(r r) uint16 { return clampU16(r.Report.ScriptErrors.Idle) }),
		runCol("script_errors_warmup", "UInt16", func(r r) uint16 { return clampU16(r.Report.ScriptErrors.Warmup) }),
		runCol("script_errors_batch", "UInt16", func(r r) uint16 { return clampU16(r.Report.ScriptErrors.Batch) }),
		runCol("script_errors_timing", "UInt16", func(r r) uint16 { return clampU16(r.Report.ScriptErrors.Timing) }),
		runCol("script_errors_send", "UInt16", func(r r) uint16 { return clampU16(r.Report.ScriptErrors.Send) }),
		runCol("alt_svc", "UInt8", func(r r) uint8 { return uint8(r.Report.AltSvc) }),
		runCol("page_origin", "String", func(r r) string { return r.Report.PageOrigin }),
		runCol("beacon_version", "String", func(r r) string { return r.Report.BeaconVersion }),
		runCol("beacon_major", "UInt16", func(r r) uint16 { return BeaconMajor(r.Report.BeaconVersion) }),
		runCol("param_parallel", "UInt8", func(r r) uint8 { return clampU8(r.Report.Params.Parallel) }),
		runCol("param_warmup", "UInt8", func(r r) uint8 { return clampU8(r.Report.Params.Warmup) }),
		runCol("param_bytes", "UInt32", func(r r) uint32 { return clampU32(r.Report.Params.Bytes) }),
		runCol("param_extra", "String", func(r r) string { return r.Report.Params.Extra }),
		runCol("param_order", "Enum8('h2first' = 1, 'h3first' = 2)", func(r r) int8 { return orderValue(r.Report.Params.Order) }),
		runCol("param_trigger", "Enum8('load' = 1, 'manual' = 2)", func(r r) int8 { return triggerValue(r.Report.Params.Trigger) }),
		runCol("continent", "String", func(r r) string { return r.Geo.Continent }),
		runCol("country", "String", func(r r) string { return r.Geo.Country }),
		runCol("subdivision", "String", func(r r) string { return r.Geo.Subdivision }),
		runCol("city_id", "UInt32", func(r r) uint32 { return r.Geo.CityID }),
		runCol("asn", "UInt32", func(r r) uint32 { return r.Geo.ASN }),
		runCol("as_org", "String", func(r r) string { return r.Geo.ASOrg }),
		runCol("browser", "String", func(r r) string { return r.Browser }),
		runCol("browser_major", "UInt16", func(r r) uint16 { return uint16(min(max(r.BrowserMajor, 0), math.MaxUint16)) }),
		runCol("platform", "String", func(r r) string { return r.Report.Client.Platform }),
		runCol("mobile", "UInt8", func(r r) uint8 { return b2u(r.Report.Client.Mobile) }),
		runCol("ect", "String", func(r r) string { return r.Report.Client.EffectiveType }),
		runCol("net_rtt_ms", "Float32", func(r r) float32 { return float32(r.Report.Client.RTT) }),
		runCol("net_downlink", "Float32", func(r r) float32 { return float32(r.Report.Client.Downlink) }),
		runCol("bot", "UInt8", func(r r) uint8 { return b2u(r.Bot) }),
		col("run_flags", "UInt32", func(r r, s s) uint32 { return r.flagsOn(s) }),
	}
}

// Enum types shared by several columns, as the migrations spell them.
const (
	protoEnum   = "Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3)"
	phaseEnum   = "Enum8('warmup' = 1, 'parallel' = 2, 'handshake' = 3)"
	sourceEnum  = "Enum8('browser' = 1, 'agent' = 2)"
	outcomeEnum = "Enum8('other' = 0, 'h2' = 1, 'h3' = 2, 'wanted_h3_got_h2' = 3)"
)

// runRow is what every row of one run shares: the run and the values
// derived from it as a whole, computed once per run.
type runRow struct {
	*Run
	exclusions Exclusions
	cold       seqSet   // seq numbers of cold batch requests
	flags      RunFlags // on the sample at flagsAt (runFlagsOf)
	flagsAt    int
	facts      RunFlags // on the first sample (factFlagsOf)
}

// column is one column of the samples table: a run's rows share the
// runRow, and each is one of its samples.
type column = tableColumn[*runRow, beacon.Sample]

// col is a column whose value may differ from sample to sample.
func col[T any](name, typ string, fill func(*runRow, *beacon.Sample) T) column {
	return elemCol(name, typ, fill)
}

// runCol is a column whose value is the run's, the same in each of its
// rows: it is computed once per run.
func runCol[T any](name, typ string, fill func(*runRow) T) column {
	return parentCol[*runRow, beacon.Sample](name, typ, fill)
}

// samplesTable is the samples table as sampleColumns defines it.
var samplesTable = newTable("samples", sampleColumns)

// BeaconMajor is the major version of a script version ("1.4.2" → 1), 0
// when it has none: one of the design fields reports never pool across.
func BeaconMajor(v string) uint16 {
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.ParseUint(major, 10, 16)
	if err != nil {
		return 0
	}
	return uint16(n)
}

// HandshakeSeqBase is added to a handshake sample's seq when it is
// stored, so that it never meets a report sample's (at most
// beacon.MaxSamples) in the table's key.
const HandshakeSeqBase = 64

func storedSeq(s *beacon.Sample) uint8 {
	if s.Phase == beacon.PhaseHandshake {
		return clampU8(HandshakeSeqBase + s.Seq)
	}
	return clampU8(s.Seq)
}

func b2u(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

func clampU8(v int) uint8   { return uint8(min(max(v, 0), math.MaxUint8)) }
func clampU16(v int) uint16 { return uint16(min(max(v, 0), math.MaxUint16)) }
func clampU32(v int) uint32 { return uint32(min(max(v, 0), math.MaxUint32)) }

// protoValue and the …Value functions after it give the Enum8 values as
// numbered in the migrations. What the decoder should never let through
// maps to the least harmful member: an unknown phase to warmup, which
// reports leave out.
func protoValue(p beacon.Proto) int8 {
	switch p {
	case beacon.ProtoH1:
		return 1
	case beacon.ProtoH2:
		return 2
	case beacon.ProtoH3:
		return 3
	}
	return 0
}

func phaseValue(p beacon.Phase) int8 {
	switch p {
	case beacon.PhaseParallel:
		return 2
	case beacon.PhaseHandshake:
		return 3
	}
	return 1
}

func sourceValue(s string) int8 {
	if s == SourceAgent {
		return 2
	}
	return 1
}

func orderValue(o string) int8 {
	if o == "h3first" {
		return 2
	}
	return 1
}

func triggerValue(t string) int8 {
	if t == "manual" {
		return 2
	}
	return 1
}

// SampleColumnTypes maps each samples column to its ClickHouse type, as
// the definition states it.
func SampleColumnTypes() map[string]string { return samplesTable.columnTypes() }
