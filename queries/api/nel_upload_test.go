package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/ingest"
	"github.com/h3rum/h3rum/ingest/nel"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/render"
)

// TestNELUploadCannotBreakReport is the attack of issue 45 over real
// listeners: an unauthenticated POST /reports whose report claims a
// sampling fraction of 5e-324 (or 1e-300) is refused with the reason,
// while real uploads beside it are taken; rows a collector stored before
// it refused them are left out of the NEL section; and GET /api/report,
// the dashboard and the HTML report carry a finite report, not an empty
// 200 or null.
func TestNELUploadCannotBreakReport(t *testing.T) {
	conn := newDB(t)
	ctx := context.Background()
	p := &ingest.Pipeline{Conn: conn, Dir: t.TempDir(), FlushInterval: 20 * time.Millisecond}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	ingestSrv := httptest.NewServer(&ingest.Handler{Sink: p, NELSink: p})
	t.Cleanup(ingestSrv.Close)
	reportSrv := serve(t, &Handler{Conn: conn, Token: testToken})

	upload := func(typ, proto string, fraction string) (int, string) {
		t.Helper()
		body := `[{"age":60000,"type":"network-error","url":"https://h3.rum.example/probe","body":{"type":"` + typ +
			`","phase":"connection","protocol":"` + proto + `","elapsed_time":300,"sampling_fraction":` + fraction + `}}]`
		req, _ := http.NewRequest("POST", ingestSrv.URL+"/reports", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/reports+json")
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		return res.StatusCode, b.String()
	}
	for _, f := range []string{"5e-324", "1e-300", "9e-7"} {
		status, body := upload("quic.protocol", "h3", f)
		if status != http.StatusBadRequest || !strings.HasPrefix(body, "decode_value: ") || !strings.Contains(body, "sampling_fraction") {
			t.Errorf("upload under sampling fraction %s: %d %q, want 400 decode_value naming sampling_fraction", f, status, body)
		}
	}
	if status, body := upload("quic.protocol", "h3", "1"); status != http.StatusNoContent {
		t.Fatalf("a real failure report: %d %q", status, body)
	}
	if status, body := upload("ok", "h3", "0.01"); status != http.StatusNoContent {
		t.Fatalf("a real success report: %d %q", status, body)
	}

	// What a collector before the check stored: the denormal's weight is
	// +Inf, the tiny fraction's 1e300.
	var rows store.NELRows
	b := &store.NELBatch{ID: uuid.New(), Received: time.Now().UTC().Add(-time.Minute), Reports: []nel.Report{
		{Origin: "https://h3.rum.example", Type: "quic.protocol", Phase: "connection", Protocol: "h3", SamplingFraction: 5e-324},
		{Origin: "https://h3.rum.example", Type: "ok", Phase: "application", Protocol: "h3", SamplingFraction: 1e-300},
	}}
	rows.Add(b)
	if err := rows.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM nel_reports WHERE sampling_fraction IN (1, 0.01)").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the 2 uploaded reports stored", n)
		}
	}

	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	res, body := get(t, reportSrv.URL+"/api/report?since=2h", bearer)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/report: %d %s %q", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	var rep model.Report
	if err := json.Unmarshal([]byte(body), &rep); err != nil || rep.NEL == nil {
		t.Fatalf("GET /api/report answered %d bytes that are no report with a NEL section (%v): %.200q", len(body), err, body)
	}
	if len(rep.NEL.Failures) != 1 || rep.NEL.Failures[0].Reports != 1 || rep.NEL.Failures[0].Estimated != 1 {
		t.Errorf("NEL failures %+v, want the one real report, estimated 1", rep.NEL.Failures)
	}
	if len(rep.NEL.Protocols) != 1 || rep.NEL.Protocols[0].OKEstimated != 100 || rep.NEL.Protocols[0].FailedEstimated != 1 {
		t.Errorf("NEL protocols %+v, want h3: 100 successful and 1 failed request estimated", rep.NEL.Protocols)
	}

	res, page := get(t, reportSrv.URL+"/dashboard?since=2h", bearer)
	if res.StatusCode != http.StatusOK || !strings.Contains(page, `id="nel-protocols"`) || strings.Contains(page, `class="error"`) {
		t.Errorf("dashboard: %d, NEL panel %v, an error shown %v", res.StatusCode, strings.Contains(page, `id="nel-protocols"`),
			strings.Contains(page, `class="error"`))
	}
	for _, m := range regexp.MustCompile(`(?s)<script type="application/json" id="dash-data">(.*?)</script>`).FindAllStringSubmatch(page, -1) {
		var data map[string]any
		if err := json.Unmarshal([]byte(m[1]), &data); err != nil || data == nil {
			t.Errorf("the dashboard's chart data %.100q is no object (%v)", m[1], err)
		}
	}

	full, err := queries.Run(ctx, conn, model.Options{Since: time.Now().Add(-2 * time.Hour), Until: time.Now(), By: "country", Replicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	if err := render.HTML(&html, full); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="h3rum-data">(.*?)</script>`).FindSubmatch(html.Bytes())
	var carried map[string]model.Report
	if m == nil || json.Unmarshal(m[1], &carried) != nil || carried["country"].NEL == nil {
		t.Errorf("the HTML report carries no report with a NEL section (%d bytes of page)", html.Len())
	}
}
