package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/spool"
	"github.com/h3rum/h3rum/ingest/store"
)

// handshakesJSON is an agent run's handshake samples on the wire: a full
// QUIC handshake, a 0-RTT one and a resumed TCP+TLS one.
const handshakesJSON = `[{"q":0,"ph":"h","w":"h3","g":"h3","st":120.5,"d":21.2,"dns":0,"con":10.4,"tls":10.4,"tf":10.1,"dl":0.2,"r":false,"ts":310,"sv":{"proto":"h3","cid":"q9","creq":1,"resumed":0,"early":0}},
{"q":1,"ph":"h","w":"h3","g":"h3","st":150,"d":10.9,"dns":0,"con":10.6,"tls":10.6,"tf":10.5,"dl":0.1,"r":false,"ts":310,"sv":{"proto":"h3","cid":"q10","creq":1,"resumed":1,"early":1}},
{"q":2,"ph":"h","w":"h2","g":"h2","st":170,"d":31.5,"dns":0,"con":20.8,"tls":10.2,"tf":10.3,"dl":0.2,"r":false,"ts":320,"sv":{"proto":"h2","cid":"t4","creq":1,"resumed":1,"early":0}}]`

func TestRecordRoundTrip(t *testing.T) {
	browser := testRun(t, "rt")
	browser.Bot = true
	agent := testRun(t, "rt-agent")
	agent.Source, agent.Browser, agent.HandshakeWire = store.SourceAgent, BrowserAgent, []byte(handshakesJSON)
	hs, err := beacon.DecodeHandshakes(agent.HandshakeWire)
	if err != nil {
		t.Fatal(err)
	}
	agent.Handshakes = hs
	agentNoHS := testRun(t, "rt-agent-bare")
	agentNoHS.Source = store.SourceAgent
	for _, tc := range []struct {
		name    string
		run     store.Run
		version uint64
	}{
		{"browser", browser, recordVersion},
		{"agent", agent, recordAgentRun},
		{"agent without handshakes", agentNoHS, recordAgentRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := tc.run
			rec, err := appendRecord(nil, &run)
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := binary.Uvarint(rec); v != tc.version {
				t.Errorf("record kind %d, want %d", v, tc.version)
			}
			got, err := decodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			// The record keeps the wire bytes, so the report comes back exactly.
			if !reflect.DeepEqual(got.Report, run.Report) || !bytes.Equal(got.Wire, run.Wire) {
				t.Errorf("round trip changed the report:\n got %+v\nwant %+v", *got.Report, *run.Report)
			}
			if got.Enrichment != run.Enrichment || !got.Received.Equal(run.Received) {
				t.Errorf("round trip changed the enrichment: got %+v %v, want %+v %v", got.Enrichment, got.Received, run.Enrichment, run.Received)
			}
			if !reflect.DeepEqual(got.Handshakes, run.Handshakes) || !bytes.Equal(got.HandshakeWire, run.HandshakeWire) {
				t.Errorf("round trip changed the handshakes:\n got %+v\nwant %+v", got.Handshakes, run.Handshakes)
			}
			// Every truncation fails cleanly.
			for n := range len(rec) {
				if _, err := decodeRecord(rec[:n]); err == nil {
					t.Fatalf("decoding %d of %d bytes succeeded", n, len(rec))
				}
			}
			if _, err := decodeRecord(append(rec, 0)); err == nil {
				t.Error("trailing byte accepted")
			}
		})
	}
	if _, err := appendRecord(nil, &store.Run{Report: browser.Report}); !errors.Is(err, errNoWire) {
		t.Errorf("a run without wire bytes spooled: %v", err)
	}
}

// TestRecordV1Replays replays a spool segment written by the release before
// the spool kept wire bytes (testdata, two runs): an upgrade must replay
// what the earlier process acknowledged.
func TestRecordV1Replays(t *testing.T) {
	data, err := os.ReadFile("testdata/0000000000000001.seg")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), data, 0o640); err != nil {
		t.Fatal(err)
	}
	s := &spool.Spool{Dir: dir}
	left, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	recs, next := s.Read(spool.Position{}, left.Last)
	if left.Records != 2 || len(recs) != 2 || next != (spool.Position{Segment: 1, Offset: int64(len(data))}) {
		t.Fatalf("reading the v1 segment: %+v, %d records up to %+v", left, len(recs), next)
	}
	ids := []string{"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"}
	for i, f := range recs {
		run, err := decodeRecord(f.Data)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		want, err := beacon.Decode(beacontest.Report(beacontest.Run{ID: ids[i], Warmup: 1 + i}))
		if err != nil {
			t.Fatal(err)
		}
		// Version 1 kept what the table stores: no brands, floats as Float32.
		want.Client.Brands = nil
		want.MainThreadMS = f32(want.MainThreadMS)
		want.Client.RTT, want.Client.Downlink = f32(want.Client.RTT), f32(want.Client.Downlink)
		for j := range want.Samples {
			s := &want.Samples[j]
			s.Server.ConnID = fmt.Sprintf("c%d", j%2) // the fixture of that release alternated two ids
			for _, p := range []*float64{&s.Start, &s.Duration, &s.DNS, &s.Connect, &s.TLS, &s.TTFB, &s.Download,
				&s.Server.Handle, &s.Server.RTT, &s.Server.MinRTT, &s.Server.RTTVar} {
				*p = f32(*p)
			}
		}
		if !reflect.DeepEqual(run.Report, want) {
			t.Errorf("record %d report:\n got %+v\nwant %+v", i, *run.Report, *want)
		}
		wantEnr := store.Enrichment{Geo: store.Geo{Continent: "EU", Country: "DE", Subdivision: "DE-BE", CityID: 2950159, ASN: 64500, ASOrg: "Example"},
			Browser: "Chrome", BrowserMajor: 121, Bot: i == 1}
		if run.Enrichment != wantEnr || !run.Received.Equal(time.Date(2026, 11, 30, 10, 0, i, 500, time.UTC)) {
			t.Errorf("record %d enrichment %+v at %v", i, run.Enrichment, run.Received)
		}
	}
}

func f32(v float64) float64 { return float64(float32(v)) }

type recordingFeed struct {
	mu   sync.Mutex
	runs []store.Run
}

func (f *recordingFeed) Publish(run store.Run) {
	f.mu.Lock()
	f.runs = append(f.runs, run)
	f.mu.Unlock()
}

func TestPipelineInsertsRows(t *testing.T) {
	conn := testDB(t)
	feed := &recordingFeed{}
	p := startPipeline(t, &Pipeline{Conn: conn, Dir: t.TempDir(), FlushInterval: 50 * time.Millisecond, Feed: feed})
	run := testRun(t, "rows")
	run.Bot = true
	run.Report.Samples[2].Error = "timeout"
	if err := p.Accept(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the row to arrive", func() bool { return countRows(t, conn, "SELECT count() FROM samples") == 12 })

	var (
		site, phase, want, got, errCode, country, sub, browser, order, srvProto, connID, ect string
		id                                                                                   uuid.UUID
		seq, reused, bot, srvPresent                                                         uint8
		dur, ttfb, srvRTT                                                                    float32
		cityID, asn, ts                                                                      uint32
		major                                                                                uint16
		tm                                                                                   time.Time
	)
	err := conn.QueryRow(context.Background(), `SELECT site, run_id, seq, phase, want, got, duration_ms, ttfb_ms, reused, transfer_size,
		error, srv_present, srv_proto, srv_rtt_ms, srv_conn_id, country, subdivision, city_id, asn, browser, browser_major, bot,
		param_order, ect, time FROM samples WHERE seq = 2`).Scan(
		&site, &id, &seq, &phase, &want, &got, &dur, &ttfb, &reused, &ts, &errCode, &srvPresent, &srvProto, &srvRTT, &connID,
		&country, &sub, &cityID, &asn, &browser, &major, &bot, &order, &ect, &tm)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"site", site, "rows"}, {"run_id", [16]byte(id), run.Report.RunID}, {"seq", seq, uint8(2)},
		{"phase", phase, "parallel"}, {"want", want, "h3"}, {"got", got, "h3"}, {"duration_ms", dur, float32(32.5)},
		{"ttfb_ms", ttfb, float32(20.125)}, {"reused", reused, uint8(1)}, {"transfer_size", ts, uint32(300)},
		{"error", errCode, "timeout"}, {"srv_present", srvPresent, uint8(1)}, {"srv_proto", srvProto, "h3"},
		{"srv_rtt_ms", srvRTT, float32(21.5)}, {"srv_conn_id", connID, "ch3"}, {"country", country, "DE"},
		{"subdivision", sub, "DE-BE"}, {"city_id", cityID, uint32(2950159)}, {"asn", asn, uint32(64500)},
		{"browser", browser, "Chrome"}, {"browser_major", major, uint16(121)}, {"bot", bot, uint8(1)},
		{"param_order", order, "h3first"}, {"ect", ect, "4g"}, {"time", tm.Unix(), run.Received.Unix()},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := countRows(t, conn, "SELECT count() FROM samples WHERE phase = 'warmup'"); n != 2 {
		t.Errorf("%d warm-up rows, want 2", n)
	}
	// The outcome is stored as ingest classified it: the H3 warm-up and
	// batch over h3, the H2 warm-up and batch over h2.
	if n := countRows(t, conn, "SELECT count() FROM samples WHERE outcome = 'h3' AND want = 'h3'"); n != 6 {
		t.Errorf("%d rows with outcome h3, want 6", n)
	}
	if n := countRows(t, conn, "SELECT count() FROM samples WHERE outcome = 'h2' AND want = 'h2'"); n != 6 {
		t.Errorf("%d rows with outcome h2, want 6", n)
	}
	// Its exclusions are computed once for the whole run and stored on
	// every row: a bot, a failed batch request, a single H3 warm-up.
	wantX := uint64(store.ExcludeBot | store.ExcludeFailed | store.ExcludeShortWarmup)
	if n := countRows(t, conn, "SELECT count() FROM samples WHERE exclusions = ?", wantX); n != 12 {
		t.Errorf("%d rows with exclusions %08b, want all 12", n, wantX)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	feed.mu.Lock()
	defer feed.mu.Unlock()
	if len(feed.runs) != 1 || feed.runs[0].Report.RunID != run.Report.RunID {
		t.Errorf("the feed saw %d runs, want the one accepted", len(feed.runs))
	}
	if segs, _ := listSegments(p.Dir); len(segs) != 0 {
		t.Errorf("spool still holds segments %v after everything was inserted", segs)
	}
}

// TestPipelineClickHouseDown: with ClickHouse unreachable every Accept
// still succeeds (the spool holds the runs); a new pipeline on the same
// spool with ClickHouse back inserts them all exactly once.
func TestPipelineClickHouseDown(t *testing.T) {
	dir := t.TempDir()
	down := &Pipeline{Conn: deadConn(t), Dir: dir, QueueRuns: 8, SegmentBytes: 16 << 10, FlushInterval: 20 * time.Millisecond}
	if err := down.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	const runs = 100
	var ids []string
	for range runs {
		run := testRun(t, "down")
		ids = append(ids, uuid.UUID(run.Report.RunID).String())
		if err := down.Accept(context.Background(), run); err != nil {
			t.Fatalf("Accept with ClickHouse down: %v", err)
		}
	}
	st := down.Stats()
	if st.SpoolSegments < 2 || !st.Replaying {
		t.Errorf("stats %+v: want several segments and the batcher reading the spool", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := down.Shutdown(ctx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "kept for the next start") {
		t.Errorf("Shutdown with ClickHouse down = %v, want a note that the spool keeps the rows", err)
	}
	if err := down.Accept(context.Background(), testRun(t, "down")); !errors.Is(err, ErrClosed) {
		t.Errorf("Accept after Shutdown = %v, want ErrClosed", err)
	}

	conn := testDB(t)
	up := startPipeline(t, &Pipeline{Conn: conn, Dir: dir, FlushInterval: 20 * time.Millisecond})
	waitFor(t, "the spool to drain", func() bool { return up.Stats().SpoolSegments <= 1 })
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := up.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, conn, "SELECT count() FROM samples FINAL"); n != runs*12 {
		t.Errorf("%d rows after replay, want %d", n, runs*12)
	}
	if n := countRows(t, conn, "SELECT uniqExact(run_id) FROM samples WHERE has(?, toString(run_id))", ids); n != runs {
		t.Errorf("%d distinct runs arrived, want %d", n, runs)
	}
	if segs, _ := listSegments(dir); len(segs) != 0 {
		t.Errorf("segments %v left after replay", segs)
	}
}

func TestBusyWhenSpoolFull(t *testing.T) {
	dir := t.TempDir()
	p := &Pipeline{Conn: deadConn(t), Dir: dir, QueueRuns: 4, SpoolMaxBytes: 64 << 10, SegmentBytes: 8 << 10}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	accepted := 0
	var busy error
	for range 1000 {
		if err := p.Accept(context.Background(), testRun(t, "busy")); err != nil {
			busy = err
			break
		}
		accepted++
	}
	if !errors.Is(busy, ErrBusy) {
		t.Fatalf("after %d runs Accept = %v, want ErrBusy", accepted, busy)
	}
	if st := p.Stats(); st.SpoolBytes > 64<<10 {
		t.Errorf("spool holds %d bytes, over its 64 KiB budget", st.SpoolBytes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	p.Shutdown(ctx)
	cancel()

	// Nothing acknowledged is lost: all of it arrives once ClickHouse does.
	conn := testDB(t)
	up := startPipeline(t, &Pipeline{Conn: conn, Dir: dir})
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := up.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, conn, "SELECT count() FROM samples FINAL"); n != uint64(accepted*12) {
		t.Errorf("%d rows, want the %d acknowledged runs × 12", n, accepted)
	}
}

func TestGroupCommit(t *testing.T) {
	p := startPipeline(t, &Pipeline{Conn: deadConn(t), Dir: t.TempDir(), QueueRuns: 1 << 12})
	var wg sync.WaitGroup
	const n = 200
	for range n {
		wg.Go(func() {
			if err := p.Accept(context.Background(), testRun(t, "group")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	fsyncs := counterValue(t, p.m.fsyncs)
	if fsyncs >= n {
		t.Errorf("%v fsyncs for %d concurrent Accepts: no group commit", fsyncs, n)
	}
	t.Logf("%d concurrent Accepts, %v fsyncs", n, fsyncs)
}

// TestReplayStoresOnce replays a spool whose runs are all in ClickHouse
// already — what a collector killed between an insert and the spool trim
// leaves — and checks that raw rows and the rollup count every run once.
func TestReplayStoresOnce(t *testing.T) {
	conn := testDB(t)
	dir := t.TempDir()
	first := startPipeline(t, &Pipeline{Conn: conn, Dir: dir, FlushInterval: 20 * time.Millisecond})
	const runs = 40
	for range runs {
		if err := first.Accept(context.Background(), testRun(t, "replay")); err != nil {
			t.Fatal(err)
		}
	}
	// An insert's rows show in samples before its views have written theirs
	// (on 26.x, with five views, long enough to be seen): the rollup is
	// waited for too, so that what is counted after the replay is the
	// replay's doing.
	waitFor(t, "the runs to be inserted", func() bool {
		return countRows(t, conn, "SELECT count() FROM samples") == runs*12 &&
			countRows(t, conn, "SELECT toUInt64(countMerge(samples)) FROM samples_rollup") == runs*10
	})
	// The "crash": a copy of the spool as it is now, with every record in it
	// already inserted, handed to a new process.
	second := replayCopy(t, conn, dir)
	if n := countRows(t, conn, "SELECT count() FROM samples"); n != runs*12 {
		t.Errorf("%d raw rows after the replay, want %d: replayed runs stored twice", n, runs*12)
	}
	// The rollup view keeps parallel, successful rows: 10 per run.
	if n := countRows(t, conn, "SELECT toUInt64(countMerge(samples)) FROM samples_rollup"); n != runs*10 {
		t.Errorf("rollup counts %d samples after the replay, want %d", n, runs*10)
	}
	if got := counterValue(t, second.m.replaySkipped); got != runs {
		t.Errorf("replay skipped %v runs, want %d", got, runs)
	}
}

// TestCommitDelay: reports that arrive within CommitDelay of the first
// waiting one share its write and fsync. Eight Accepts 10 ms apart would
// take eight fsyncs without it (one takes about a millisecond here).
func TestCommitDelay(t *testing.T) {
	p := startPipeline(t, &Pipeline{Conn: deadConn(t), Dir: t.TempDir(), Ready: make(chan struct{}), CommitDelay: 400 * time.Millisecond})
	run := testRun(t, "delay")
	const n = 8
	errs := make(chan error, n)
	for range n {
		time.Sleep(10 * time.Millisecond)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs <- p.Accept(ctx, run)
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := counterValue(t, p.m.fsyncs); got > 2 {
		t.Errorf("%d Accepts 10 ms apart took %.0f fsyncs; within a 400 ms commit delay, want 1 (2 at most)", n, got)
	}
}
