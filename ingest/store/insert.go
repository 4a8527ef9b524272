package ingest

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon"
)

//go:embed sql/insert_samples.sql
var insertSamplesSQL string

// sampleColumns buffers one insert batch column by column: clickhouse-go
// appends a whole slice per column far faster than row by row. The order of
// columns() is the order of sql/insert_samples.sql.
type sampleColumns struct {
	time                                               []time.Time
	site                                               []string
	runID                                              []uuid.UUID
	seq                                                []uint8
	phase, want, got                                   []int8
	start, duration, dns, connect, tls, ttfb, download []float32
	reused                                             []uint8
	transferSize                                       []uint32
	errorCode                                          []string
	srvPresent                                         []uint8
	srvProto                                           []int8
	srvHandle, srvRTT, srvMinRTT, srvRTTVar            []float32
	srvLost                                            []uint32
	srvConnID                                          []string
	srvConnReqs                                        []uint32
	srvResumed, srvEarly, partial                      []uint8
	pageOrigin, beaconVersion                          []string
	paramParallel, paramWarmup                         []uint8
	paramBytes                                         []uint32
	paramOrder, paramTrigger                           []int8
	continent, country, subdivision                    []string
	cityID, asn                                        []uint32
	asOrg, browser                                     []string
	browserMajor                                       []uint16
	platform                                           []string
	mobile                                             []uint8
	ect                                                []string
	netRTT, netDownlink                                []float32
	bot                                                []uint8
}

// columns lists the buffers with their column names, in insert order.
func (c *sampleColumns) columns() []struct {
	name string
	data any
} {
	type col = struct {
		name string
		data any
	}
	return []col{
		{"time", c.time}, {"site", c.site}, {"run_id", c.runID}, {"seq", c.seq},
		{"phase", c.phase}, {"want", c.want}, {"got", c.got},
		{"start_ms", c.start}, {"duration_ms", c.duration}, {"dns_ms", c.dns}, {"connect_ms", c.connect},
		{"tls_ms", c.tls}, {"ttfb_ms", c.ttfb}, {"download_ms", c.download},
		{"reused", c.reused}, {"transfer_size", c.transferSize}, {"error", c.errorCode},
		{"srv_present", c.srvPresent}, {"srv_proto", c.srvProto}, {"srv_handle_ms", c.srvHandle},
		{"srv_rtt_ms", c.srvRTT}, {"srv_min_rtt_ms", c.srvMinRTT}, {"srv_rttvar_ms", c.srvRTTVar},
		{"srv_lost", c.srvLost}, {"srv_conn_id", c.srvConnID}, {"srv_conn_reqs", c.srvConnReqs},
		{"srv_resumed", c.srvResumed}, {"srv_early", c.srvEarly},
		{"partial", c.partial}, {"page_origin", c.pageOrigin}, {"beacon_version", c.beaconVersion},
		{"param_parallel", c.paramParallel}, {"param_warmup", c.paramWarmup}, {"param_bytes", c.paramBytes},
		{"param_order", c.paramOrder}, {"param_trigger", c.paramTrigger},
		{"continent", c.continent}, {"country", c.country}, {"subdivision", c.subdivision},
		{"city_id", c.cityID}, {"asn", c.asn}, {"as_org", c.asOrg},
		{"browser", c.browser}, {"browser_major", c.browserMajor}, {"platform", c.platform},
		{"mobile", c.mobile}, {"ect", c.ect}, {"net_rtt_ms", c.netRTT}, {"net_downlink", c.netDownlink},
		{"bot", c.bot},
	}
}

// reset empties the buffers, keeping their capacity for the next batch.
func (c *sampleColumns) reset() {
	*c = sampleColumns{
		c.time[:0], c.site[:0], c.runID[:0], c.seq[:0], c.phase[:0], c.want[:0], c.got[:0],
		c.start[:0], c.duration[:0], c.dns[:0], c.connect[:0], c.tls[:0], c.ttfb[:0], c.download[:0],
		c.reused[:0], c.transferSize[:0], c.errorCode[:0], c.srvPresent[:0], c.srvProto[:0],
		c.srvHandle[:0], c.srvRTT[:0], c.srvMinRTT[:0], c.srvRTTVar[:0], c.srvLost[:0], c.srvConnID[:0],
		c.srvConnReqs[:0], c.srvResumed[:0], c.srvEarly[:0], c.partial[:0], c.pageOrigin[:0], c.beaconVersion[:0],
		c.paramParallel[:0], c.paramWarmup[:0], c.paramBytes[:0], c.paramOrder[:0], c.paramTrigger[:0],
		c.continent[:0], c.country[:0], c.subdivision[:0], c.cityID[:0], c.asn[:0], c.asOrg[:0],
		c.browser[:0], c.browserMajor[:0], c.platform[:0], c.mobile[:0], c.ect[:0], c.netRTT[:0], c.netDownlink[:0],
		c.bot[:0],
	}
}

// add appends one row per sample of run.
func (c *sampleColumns) add(run *Run) {
	rep := run.Report
	if rep == nil {
		return
	}
	t := run.Received.UTC().Truncate(time.Second)
	id := uuid.UUID(rep.RunID)
	for i := range rep.Samples {
		s := &rep.Samples[i]
		c.time = append(c.time, t)
		c.site = append(c.site, rep.Site)
		c.runID = append(c.runID, id)
		c.seq = append(c.seq, clampU8(s.Seq))
		c.phase = append(c.phase, phaseEnum(s.Phase))
		c.want = append(c.want, protoEnum(s.Want))
		c.got = append(c.got, protoEnum(s.Got))
		c.start = append(c.start, float32(s.Start))
		c.duration = append(c.duration, float32(s.Duration))
		c.dns = append(c.dns, float32(s.DNS))
		c.connect = append(c.connect, float32(s.Connect))
		c.tls = append(c.tls, float32(s.TLS))
		c.ttfb = append(c.ttfb, float32(s.TTFB))
		c.download = append(c.download, float32(s.Download))
		c.reused = append(c.reused, b2u(s.Reused))
		c.transferSize = append(c.transferSize, clampU32(s.TransferSize))
		c.errorCode = append(c.errorCode, s.Error)
		st := &s.Server
		c.srvPresent = append(c.srvPresent, b2u(st.Present))
		c.srvProto = append(c.srvProto, protoEnum(st.Proto))
		c.srvHandle = append(c.srvHandle, float32(st.Handle))
		c.srvRTT = append(c.srvRTT, float32(st.RTT))
		c.srvMinRTT = append(c.srvMinRTT, float32(st.MinRTT))
		c.srvRTTVar = append(c.srvRTTVar, float32(st.RTTVar))
		c.srvLost = append(c.srvLost, clampU32(st.Lost))
		c.srvConnID = append(c.srvConnID, st.ConnID)
		c.srvConnReqs = append(c.srvConnReqs, clampU32(st.ConnReqs))
		c.srvResumed = append(c.srvResumed, b2u(st.Resumed))
		c.srvEarly = append(c.srvEarly, b2u(st.EarlyData))
		c.partial = append(c.partial, b2u(rep.Partial))
		c.pageOrigin = append(c.pageOrigin, rep.PageOrigin)
		c.beaconVersion = append(c.beaconVersion, rep.BeaconVersion)
		c.paramParallel = append(c.paramParallel, clampU8(rep.Params.Parallel))
		c.paramWarmup = append(c.paramWarmup, clampU8(rep.Params.Warmup))
		c.paramBytes = append(c.paramBytes, clampU32(rep.Params.Bytes))
		c.paramOrder = append(c.paramOrder, orderEnum(rep.Params.Order))
		c.paramTrigger = append(c.paramTrigger, triggerEnum(rep.Params.Trigger))
		c.continent = append(c.continent, run.Geo.Continent)
		c.country = append(c.country, run.Geo.Country)
		c.subdivision = append(c.subdivision, run.Geo.Subdivision)
		c.cityID = append(c.cityID, run.Geo.CityID)
		c.asn = append(c.asn, run.Geo.ASN)
		c.asOrg = append(c.asOrg, run.Geo.ASOrg)
		c.browser = append(c.browser, run.Browser)
		c.browserMajor = append(c.browserMajor, uint16(min(max(run.BrowserMajor, 0), math.MaxUint16)))
		c.platform = append(c.platform, rep.Client.Platform)
		c.mobile = append(c.mobile, b2u(rep.Client.Mobile))
		c.ect = append(c.ect, rep.Client.EffectiveType)
		c.netRTT = append(c.netRTT, float32(rep.Client.RTT))
		c.netDownlink = append(c.netDownlink, float32(rep.Client.Downlink))
		c.bot = append(c.bot, b2u(run.Bot))
	}
}

// insertColumns sends the buffered rows as one INSERT.
func insertColumns(ctx context.Context, conn driver.Conn, c *sampleColumns) error {
	batch, err := conn.PrepareBatch(ctx, insertSamplesSQL)
	if err != nil {
		return fmt.Errorf("preparing samples insert: %w", err)
	}
	for i, col := range c.columns() {
		if err := batch.Column(i).Append(col.data); err != nil {
			batch.Abort()
			return fmt.Errorf("appending samples column %s: %w", col.name, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("sending samples insert: %w", err)
	}
	return nil
}

func clampU8(v int) uint8   { return uint8(min(max(v, 0), math.MaxUint8)) }
func clampU32(v int) uint32 { return uint32(min(max(v, 0), math.MaxUint32)) }

// Enum8 values as numbered in migrations/0001_samples.sql. Values the
// decoder should never let through map to the least harmful member: an
// unknown phase to warmup, which reports leave out.
func protoEnum(p beacon.Proto) int8 {
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

func phaseEnum(p beacon.Phase) int8 {
	if p == beacon.PhaseParallel {
		return 2
	}
	return 1
}

func orderEnum(o string) int8 {
	if o == "h3first" {
		return 2
	}
	return 1
}

func triggerEnum(t string) int8 {
	if t == "manual" {
		return 2
	}
	return 1
}
