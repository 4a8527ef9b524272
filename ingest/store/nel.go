package store

import (
	"context"
	_ "embed"
	"math"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/h3rum/h3rum/ingest/nel"
)

// NELBatch is one accepted upload of Network Error Logging reports as it is
// stored: one row of nel_reports per report. ID is made when the upload is
// accepted and spooled with it, so that a replay is recognised.
type NELBatch struct {
	ID       uuid.UUID
	Received time.Time
	Reports  []nel.Report
	Enrichment
}

// nelColumns is the one definition of a nel_reports row, as sampleColumns
// is of a samples row; a test checks it against the migrated table.
func nelColumns() []nelColumn {
	type (
		b = *NELBatch
		r = *nelReport
	)
	return []nelColumn{
		ncol("time", "DateTime('UTC')", func(b b, r r) time.Time {
			return b.Received.UTC().Add(-time.Duration(r.AgeMS) * time.Millisecond).Truncate(time.Second)
		}),
		ncol("received", "DateTime('UTC')", func(b b, _ r) time.Time { return b.Received.UTC().Truncate(time.Second) }),
		ncol("batch_id", "UUID", func(b b, _ r) uuid.UUID { return b.ID }),
		ncol("seq", "UInt16", func(_ b, r r) uint16 { return uint16(r.seq) }),
		ncol("origin", "String", func(_ b, r r) string { return r.Origin }),
		ncol("probe", "UInt8", func(_ b, r r) uint8 { return b2u(r.Probe) }),
		ncol("page_origin", "String", func(_ b, r r) string { return r.PageOrigin }),
		ncol("type", "String", func(_ b, r r) string { return r.Type }),
		ncol("phase", nelPhaseEnum, func(_ b, r r) int8 { return nelPhaseValue(r.Phase) }),
		ncol("protocol", protoEnum, func(_ b, r r) int8 { return nelProtoValue(r.Protocol) }),
		ncol("protocol_raw", "String", func(_ b, r r) string { return r.Protocol }),
		ncol("method", "String", func(_ b, r r) string { return r.Method }),
		ncol("status_code", "UInt16", func(_ b, r r) uint16 { return uint16(min(max(r.StatusCode, 0), math.MaxUint16)) }),
		ncol("elapsed_ms", "Float32", func(_ b, r r) float32 { return float32(r.ElapsedMS) }),
		ncol("server_ip", "String", func(_ b, r r) string { return r.ServerIP }),
		ncol("sampling_fraction", "Float64", func(_ b, r r) float64 { return r.SamplingFraction }),
		ncol("continent", "String", func(b b, _ r) string { return b.Geo.Continent }),
		ncol("country", "String", func(b b, _ r) string { return b.Geo.Country }),
		ncol("subdivision", "String", func(b b, _ r) string { return b.Geo.Subdivision }),
		ncol("city_id", "UInt32", func(b b, _ r) uint32 { return b.Geo.CityID }),
		ncol("asn", "UInt32", func(b b, _ r) uint32 { return b.Geo.ASN }),
		ncol("as_org", "String", func(b b, _ r) string { return b.Geo.ASOrg }),
		ncol("browser", "String", func(b b, _ r) string { return b.Browser }),
		ncol("browser_major", "UInt16", func(b b, _ r) uint16 { return uint16(min(max(b.BrowserMajor, 0), math.MaxUint16)) }),
		ncol("bot", "UInt8", func(b b, _ r) uint8 { return b2u(b.Bot) }),
	}
}

const nelPhaseEnum = "Enum8('dns' = 1, 'connection' = 2, 'application' = 3)"

func nelPhaseValue(p string) int8 {
	switch p {
	case nel.PhaseDNS:
		return 1
	case nel.PhaseConnection:
		return 2
	}
	return 3
}

func nelProtoValue(p string) int8 {
	switch nel.Proto(p) {
	case "h1":
		return 1
	case "h2":
		return 2
	case "h3":
		return 3
	}
	return 0
}

// nelReport is a report and its position in the upload: with the
// upload's id, its identity.
type nelReport struct {
	seq int
	nel.Report
}

// nelColumn is one column of nel_reports: an upload's rows share the
// NELBatch, and each is one of its reports.
type nelColumn = tableColumn[*NELBatch, nelReport]

func ncol[T any](name, typ string, fill func(*NELBatch, *nelReport) T) nelColumn {
	return elemCol(name, typ, fill)
}

// nelTable is nel_reports as nelColumns defines it.
var nelTable = newTable("nel_reports", nelColumns)

// NELColumnTypes maps each nel_reports column to its ClickHouse type, as
// the definition states it.
func NELColumnTypes() map[string]string { return nelTable.columnTypes() }

// NELRows buffers nel_reports rows column by column for one INSERT. The
// zero value is ready to use.
type NELRows struct {
	rowBuffer[*NELBatch, nelReport]
	reports []nelReport // the upload being added
}

// Add appends one row per report of b.
func (n *NELRows) Add(b *NELBatch) {
	n.reports = n.reports[:0]
	for i, r := range b.Reports {
		n.reports = append(n.reports, nelReport{i, r})
	}
	n.add(nelTable, b, n.reports)
	clear(n.reports) // the scratch slice keeps no upload alive
}

// Insert sends the buffered rows as one INSERT; the buffer is unchanged,
// so a failed insert can be retried.
func (n *NELRows) Insert(ctx context.Context, conn driver.Conn) error {
	return n.insert(ctx, conn, nelTable)
}

//go:embed sql/existing_nel_batches.sql
var existingNELBatchesSQL string

// existingNELBatchesLocalSQL is existingNELBatchesSQL over a cluster
// server's own nel_reports table.
var existingNELBatchesLocalSQL = overLocal(existingNELBatchesSQL, "nel_reports")

// NELStored returns the batches among batches that nel_reports already
// holds, so that a replayed or retried insert leaves them out (as Stored
// does for runs): a batch is inserted in one block, whole or not at all.
func NELStored(ctx context.Context, conn driver.Conn, batches []*NELBatch) (map[uuid.UUID]bool, error) {
	args := nelStoredArgs(batches)
	if args == nil {
		return map[uuid.UUID]bool{}, nil
	}
	return storedIDs(ctx, conn, "NEL batches", existingNELBatchesSQL, args...)
}

// NELStored is store.NELStored on cluster c, read as Cluster.Stored reads
// samples: each shard's nel_reports on a replica that has caught up, since
// one behind answers through the Distributed table as if a stored batch
// were missing. Without Dial it reads through the Distributed table.
func (c Cluster) NELStored(ctx context.Context, conn driver.Conn, batches []*NELBatch) (map[uuid.UUID]bool, error) {
	if c.Name == "" || c.Dial == nil {
		return NELStored(ctx, conn, batches)
	}
	args := nelStoredArgs(batches)
	if args == nil {
		return map[uuid.UUID]bool{}, nil
	}
	return c.storedOnShards(ctx, conn, "NEL batches", "nel_reports", existingNELBatchesLocalSQL, args)
}

// nelStoredArgs returns existing_nel_batches.sql's arguments for batches;
// nil when no batch has reports.
func nelStoredArgs(batches []*NELBatch) []any {
	var (
		ids         []string
		first, last int64
	)
	for _, b := range batches {
		if len(b.Reports) == 0 {
			continue
		}
		t := b.Received.UTC().Unix()
		if len(ids) == 0 || t < first {
			first = t
		}
		if len(ids) == 0 || t > last {
			last = t
		}
		ids = append(ids, b.ID.String())
	}
	if len(ids) == 0 {
		return nil
	}
	return []any{first, last, ids}
}
