package store

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strings"
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
		b = *nelRow
		r = *nel.Report
	)
	return []nelColumn{
		ncol("time", "DateTime('UTC')", func(b b, r r) time.Time {
			return b.Received.UTC().Add(-time.Duration(r.AgeMS) * time.Millisecond).Truncate(time.Second)
		}),
		ncol("received", "DateTime('UTC')", func(b b, _ r) time.Time { return b.Received.UTC().Truncate(time.Second) }),
		ncol("batch_id", "UUID", func(b b, _ r) uuid.UUID { return b.ID }),
		ncol("seq", "UInt16", func(b b, _ r) uint16 { return uint16(b.seq) }),
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

// nelRow is a report's batch and its position in the upload: with the
// batch id, its identity.
type nelRow struct {
	*NELBatch
	seq int
}

// nelColumn buffers one column of a nel_reports insert.
type nelColumn interface {
	name() string
	chType() string
	add(b *nelRow, r *nel.Report)
	values() any
	reset()
}

type typedNELColumn[T any] struct {
	colName, typ string
	fill         func(*nelRow, *nel.Report) T
	data         []T
}

func ncol[T any](name, typ string, fill func(*nelRow, *nel.Report) T) nelColumn {
	return &typedNELColumn[T]{colName: name, typ: typ, fill: fill}
}

func (c *typedNELColumn[T]) name() string                 { return c.colName }
func (c *typedNELColumn[T]) chType() string               { return c.typ }
func (c *typedNELColumn[T]) values() any                  { return c.data }
func (c *typedNELColumn[T]) reset()                       { c.data = c.data[:0] }
func (c *typedNELColumn[T]) add(b *nelRow, r *nel.Report) { c.data = append(c.data, c.fill(b, r)) }

var insertNELSQL = func() string {
	var names []string
	for _, c := range nelColumns() {
		names = append(names, c.name())
	}
	return "INSERT INTO nel_reports (" + strings.Join(names, ", ") + ")"
}()

// NELColumnTypes maps each nel_reports column to its ClickHouse type, as
// the definition states it.
func NELColumnTypes() map[string]string {
	m := map[string]string{}
	for _, c := range nelColumns() {
		m[c.name()] = c.chType()
	}
	return m
}

// NELRows buffers nel_reports rows column by column for one INSERT. The
// zero value is ready to use.
type NELRows struct {
	cols []nelColumn
	rows int
}

// Add appends one row per report of b.
func (n *NELRows) Add(b *NELBatch) {
	if n.cols == nil {
		n.cols = nelColumns()
	}
	for i := range b.Reports {
		row := &nelRow{b, i}
		for _, c := range n.cols {
			c.add(row, &b.Reports[i])
		}
	}
	n.rows += len(b.Reports)
}

// Rows is the number of rows buffered.
func (n *NELRows) Rows() int { return n.rows }

// Reset empties the buffer.
func (n *NELRows) Reset() {
	for _, c := range n.cols {
		c.reset()
	}
	n.rows = 0
}

// Insert sends the buffered rows as one INSERT; the buffer is unchanged,
// so a failed insert can be retried.
func (n *NELRows) Insert(ctx context.Context, conn driver.Conn) error {
	if n.rows == 0 {
		return nil
	}
	batch, err := conn.PrepareBatch(ctx, insertNELSQL)
	if err != nil {
		return fmt.Errorf("preparing nel_reports insert: %w", err)
	}
	for i, c := range n.cols {
		if err := batch.Column(i).Append(c.values()); err != nil {
			batch.Abort()
			return fmt.Errorf("appending nel_reports column %s: %w", c.name(), err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("sending nel_reports insert: %w", err)
	}
	return nil
}

//go:embed sql/existing_nel_batches.sql
var existingNELBatchesSQL string

// NELStored returns the batches among batches that nel_reports already
// holds, so that a replayed or retried insert leaves them out (as Stored
// does for runs): a batch is inserted in one block, whole or not at all.
func NELStored(ctx context.Context, conn driver.Conn, batches []*NELBatch) (map[uuid.UUID]bool, error) {
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
	stored := map[uuid.UUID]bool{}
	if len(ids) == 0 {
		return stored, nil
	}
	rows, err := conn.Query(ctx, existingNELBatchesSQL, first, last, ids)
	if err != nil {
		return nil, fmt.Errorf("looking for NEL batches already stored: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("looking for NEL batches already stored: %w", err)
		}
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("looking for NEL batches already stored: %w", err)
		}
		stored[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("looking for NEL batches already stored: %w", err)
	}
	return stored, nil
}
