package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/ingest/nel"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

func nelBatch(received time.Time, reports ...nel.Report) *store.NELBatch {
	b := &store.NELBatch{ID: uuid.New(), Received: received, Reports: reports}
	b.Geo = store.Geo{Continent: "EU", Country: "DE"}
	b.Browser, b.BrowserMajor = "Chrome", 156
	return b
}

// TestNELInsertAndStored stores a batch and finds it again by id, as a
// replay does, and reads back what a report's row holds.
func TestNELInsertAndStored(t *testing.T) {
	conn := storetest.DB(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	a := nelBatch(now, nel.Report{Origin: "https://h3.example", Probe: true, AgeMS: 61_000, Type: "quic.protocol",
		Phase: "connection", Protocol: "h3-29", ElapsedMS: 310, ServerIP: "192.0.2.1", SamplingFraction: 1},
		nel.Report{Origin: "https://h2.example:8444", Type: "ok", Phase: "application", Protocol: "http/1.1",
			Method: "GET", StatusCode: 204, ElapsedMS: 12, SamplingFraction: 0.01})
	b := nelBatch(now.Add(-time.Minute), nel.Report{Origin: "https://h3.example", Type: "ok", Phase: "application",
		Protocol: "h3", ElapsedMS: 5, SamplingFraction: 0.5})
	var rows store.NELRows
	rows.Add(a)
	if rows.Rows() != 2 {
		t.Fatalf("%d rows buffered, want 2", rows.Rows())
	}
	if err := rows.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	stored, err := store.NELStored(ctx, conn, []*store.NELBatch{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if !stored[a.ID] || stored[b.ID] || len(stored) != 1 {
		t.Errorf("stored = %v, want only %s", stored, a.ID)
	}
	var (
		typ, phase, proto, raw, origin string
		seq                            uint16
		when                           time.Time
		frac                           float64
	)
	if err := conn.QueryRow(ctx, `SELECT type, toString(phase), toString(protocol), protocol_raw, origin, seq, time, sampling_fraction
		FROM nel_reports WHERE batch_id = toUUID(?) AND probe = 1`, a.ID.String()).Scan(&typ, &phase, &proto, &raw, &origin, &seq, &when, &frac); err != nil {
		t.Fatal(err)
	}
	if typ != "quic.protocol" || phase != "connection" || proto != "h3" || raw != "h3-29" || origin != "https://h3.example" ||
		seq != 0 || !when.Equal(now.Add(-61*time.Second)) || frac != 1 {
		t.Errorf("row: %s %s %s %s %s seq %d at %v (received %v) fraction %v", typ, phase, proto, raw, origin, seq, when, now, frac)
	}
	if err := conn.QueryRow(ctx, "SELECT toString(protocol) FROM nel_reports WHERE batch_id = toUUID(?) AND seq = 1", a.ID.String()).Scan(&proto); err != nil || proto != "h1" {
		t.Errorf("http/1.1 stored as %q (%v), want h1", proto, err)
	}
}

func TestRetentionDropsOldNELPartitions(t *testing.T) {
	conn := storetest.DB(t)
	ctx := context.Background()
	now := time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)
	var rows store.NELRows
	for _, at := range []time.Time{now, now.AddDate(0, -3, 0)} {
		rows.Add(nelBatch(at, nel.Report{Origin: "https://h3.example", Type: "ok", Phase: "application", SamplingFraction: 1}))
	}
	if err := rows.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	dropped, err := store.DropExpired(ctx, conn, 60*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dropped, []string{"nel_reports/202503"}) {
		t.Errorf("dropped %v, want nel_reports/202503", dropped)
	}
	if n := countRows(t, conn, "SELECT count() FROM nel_reports"); n != 1 {
		t.Errorf("%d NEL rows left, want 1", n)
	}
}
