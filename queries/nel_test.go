package queries

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/ingest/nel"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/model"
)

// TestNELSection stores NEL reports with known weights, and beacon runs, and
// checks the report's NEL section: failures weighted by 1 / sampling
// fraction per group, type and protocol, bots left out, the failure share
// and NEL's elapsed times beside the beacon's — in the JSON and the text.
func TestNELSection(t *testing.T) {
	conn := newDB(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	batch := func(country, continent string, bot bool, reports ...nel.Report) *store.NELBatch {
		b := &store.NELBatch{ID: uuid.New(), Received: now.Add(-time.Hour), Reports: reports}
		b.Geo = store.Geo{Continent: continent, Country: country}
		b.Browser, b.BrowserMajor, b.Bot = "Chrome", 156, bot
		return b
	}
	fail := func(typ, phase, proto string, f float64) nel.Report {
		return nel.Report{Origin: "https://h3.example", Probe: true, Type: typ, Phase: phase, Protocol: proto, ElapsedMS: 300, SamplingFraction: f}
	}
	ok := func(proto string, elapsed int64, probe bool) nel.Report {
		return nel.Report{Origin: "https://h3.example", Probe: probe, Type: "ok", Phase: "application", Protocol: proto,
			StatusCode: 204, ElapsedMS: elapsed, SamplingFraction: 0.01}
	}
	var rows store.NELRows
	rows.Add(batch("DE", "EU", false, fail("quic.protocol", "connection", "h3", 0.5), fail("quic.protocol", "connection", "h3-29", 0.5),
		fail("tcp.refused", "connection", "", 1), ok("h3", 10, true), ok("h3", 20, true), ok("h3", 30, true), ok("h3", 5000, false)))
	rows.Add(batch("US", "NA", false, fail("http.error", "application", "h2", 1), ok("h2", 40, true)))
	rows.Add(batch("US", "NA", true, fail("dns.name_not_resolved", "dns", "", 1))) // a bot's: left out
	if err := rows.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	run := storetest.Run(t, "nel-site")
	run.Received = now.Add(-time.Hour)
	b.Add(&run)
	if err := b.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}

	rep, err := Run(ctx, conn, model.Options{Since: now.Add(-2 * time.Hour), Until: now, By: "continent", Replicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	n := rep.NEL
	if n == nil || n.By != "continent" {
		t.Fatalf("NEL section %+v", n)
	}
	want := map[string]model.NELFailure{
		"EU/quic.protocol/h3":    {Group: "EU", Type: "quic.protocol", Phase: "connection", Proto: "h3", Reports: 2, Estimated: 4},
		"EU/tcp.refused/unknown": {Group: "EU", Type: "tcp.refused", Phase: "connection", Proto: "unknown", Reports: 1, Estimated: 1},
		"NA/http.error/h2":       {Group: "NA", Type: "http.error", Phase: "application", Proto: "h2", Reports: 1, Estimated: 1},
	}
	if len(n.Failures) != len(want) {
		t.Fatalf("failures %+v, want %d rows", n.Failures, len(want))
	}
	for _, f := range n.Failures {
		if w, ok := want[f.Group+"/"+f.Type+"/"+f.Proto]; !ok || f != w {
			t.Errorf("failure row %+v, want %+v", f, w)
		}
	}
	if n.Failures[0].Estimated != 4 {
		t.Errorf("failures not sorted by estimated requests: %+v", n.Failures)
	}
	protos := map[string]model.NELProtocol{}
	for _, p := range n.Protocols {
		protos[p.Proto] = p
	}
	h3 := protos["h3"]
	if h3.OKReports != 4 || h3.OKEstimated != 400 || h3.FailedEstimated != 4 || h3.ProbeOKReports != 3 || h3.FailureShare == nil ||
		math.Abs(*h3.FailureShare-4.0/404) > 1e-6 {
		t.Errorf("h3 %+v", h3)
	}
	if p50 := pctl(h3.Elapsed, 50); p50 < 15 || p50 > 25 {
		t.Errorf("NEL h3 probe elapsed p50 = %v, want about 20 (the 5 s non-probe request left out): %+v", p50, h3.Elapsed)
	}
	if h3.BeaconSamples == 0 || len(h3.Beacon) != len(percentiles) || pctl(h3.Beacon, 50) <= 0 {
		t.Errorf("beacon figures beside NEL's h3: %d samples, %+v", h3.BeaconSamples, h3.Beacon)
	}
	if u := protos["unknown"]; u.FailureShare != nil || u.FailedEstimated != 1 || len(u.Elapsed) != 0 {
		t.Errorf("unknown protocol %+v: failures only, no share without success reports", u)
	}

	withBots, err := Run(ctx, conn, model.Options{Since: now.Add(-2 * time.Hour), Until: now, By: "collector", IncludeBots: true, Replicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	if withBots.NEL.By != "continent" || len(withBots.NEL.Failures) != 4 {
		t.Errorf("with bots, by collector: by %s, %d failure rows; want continent (fallback) and 4", withBots.NEL.By, len(withBots.NEL.Failures))
	}

	var text bytes.Buffer
	if err := writeTable(&text, rep); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Network Error Logging", "quic.protocol", "NEL by protocol", "1.0%"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, text.String())
		}
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		NEL *model.NEL `json:"nel"`
	}
	if err := json.Unmarshal(js, &back); err != nil || back.NEL == nil || len(back.NEL.Failures) != 3 {
		t.Errorf("JSON nel section: %v %+v", err, back.NEL)
	}

	// A window without NEL reports still has the section, empty.
	empty, err := Run(ctx, conn, model.Options{Since: now.Add(-48 * time.Hour), Until: now.Add(-47 * time.Hour), Replicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	if empty.NEL == nil || len(empty.NEL.Failures) != 0 || len(empty.NEL.Protocols) != 0 {
		t.Errorf("empty window's NEL section %+v", empty.NEL)
	}
}

// TestNELDashboardPanel renders the dashboard of a complete report with NEL
// reports and finds the panel with its figures.
func TestNELDashboardPanel(t *testing.T) {
	failure := 0.25
	rep := &model.Report{By: "continent", Percentiles: percentiles[:], Groups: []model.Group{}, Timeline: []model.Hour{},
		NEL: &model.NEL{By: "continent",
			Failures: []model.NELFailure{{Group: "EU", Type: "quic.protocol", Phase: "connection", Proto: "h3", Reports: 2, Estimated: 4}},
			Protocols: []model.NELProtocol{{Proto: "h3", OKReports: 3, OKEstimated: 12, FailedEstimated: 4, FailureShare: &failure,
				ProbeOKReports: 3, Elapsed: levels([]float32{20, 25, 28, 29, 30}), BeaconSamples: 7, Beacon: levels([]float32{18, 22, 25, 26, 27})}}}}
	html, err := renderDashboard(rep, &model.Options{By: "continent"}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`id="nel-failures"`, `data-nel-type="quic.protocol"`, `data-pct="nel_estimated" data-value="4"`,
		`id="nel-protocols"`, "25.0%", "p50 20.0", "p50 18.0"} {
		if !bytes.Contains(html, []byte(s)) {
			t.Errorf("dashboard lacks %q", s)
		}
	}
	rep.NEL = nil // an estimate: no panel yet
	if html, err := renderDashboard(rep, &model.Options{By: "continent"}, false); err != nil || bytes.Contains(html, []byte(`id="nel"`)) {
		t.Errorf("estimate's dashboard has a NEL panel (%v)", err)
	}
}
