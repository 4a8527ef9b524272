package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"
)

// What the samples and nel_reports tables share: a row is defined once as
// a list of columns (name, ClickHouse type, how a value is filled), the
// insert's column list and the columnar buffers are derived from it, a
// batch is sent as one INSERT, and a replayed batch is recognised by the
// ids it stores.

// buffer is one column of an insert, whatever fills it: its values are
// appended to the batch as one slice (clickhouse-go appends a whole slice
// per column far faster than row by row).
type buffer interface {
	name() string
	chType() string
	values() any
	reset()
}

// colData is a buffer's slice of T.
type colData[T any] struct {
	colName, typ string
	data         []T
}

func (c *colData[T]) name() string   { return c.colName }
func (c *colData[T]) chType() string { return c.typ }
func (c *colData[T]) values() any    { return c.data }
func (c *colData[T]) reset()         { c.data = c.data[:0] }

// tableColumn buffers one column of a table whose rows come in groups: an
// element (E) each, sharing a parent (P) computed once per group, as a
// run's samples share the run and an upload's reports the upload. add
// appends one value per element.
type tableColumn[P, E any] interface {
	buffer
	add(p P, es []E)
}

// elemColumn is a column whose value may differ from element to element.
type elemColumn[P, E, T any] struct {
	colData[T]
	fill func(P, *E) T
}

func elemCol[P, E, T any](name, typ string, fill func(P, *E) T) tableColumn[P, E] {
	return &elemColumn[P, E, T]{colData: colData[T]{colName: name, typ: typ}, fill: fill}
}

func (c *elemColumn[P, E, T]) add(p P, es []E) {
	for i := range es {
		c.data = append(c.data, c.fill(p, &es[i]))
	}
}

// parentColumn is a column whose value is the parent's, the same in each
// of its elements' rows: it is computed once per group.
type parentColumn[P, E, T any] struct {
	colData[T]
	fill func(P) T
}

func parentCol[P, E, T any](name, typ string, fill func(P) T) tableColumn[P, E] {
	return &parentColumn[P, E, T]{colData: colData[T]{colName: name, typ: typ}, fill: fill}
}

func (c *parentColumn[P, E, T]) add(p P, es []E) {
	if len(es) == 0 {
		return
	}
	v := c.fill(p)
	for range es {
		c.data = append(c.data, v)
	}
}

// table is one table's row definition (define, the one list of its
// columns) and the INSERT derived from it.
type table[P, E any] struct {
	name, insert string
	define       func() []tableColumn[P, E]
}

func newTable[P, E any](name string, define func() []tableColumn[P, E]) *table[P, E] {
	return &table[P, E]{name: name, insert: insertSQL(name, define()), define: define}
}

// columnTypes maps each of the table's columns to its ClickHouse type, as
// the definition states it.
func (t *table[P, E]) columnTypes() map[string]string { return columnTypes(t.define()) }

// rowBuffer buffers a table's rows column by column for one INSERT. The
// zero value is ready to use; Reset keeps the buffers' capacity for the
// next batch.
type rowBuffer[P, E any] struct {
	cols []tableColumn[P, E]
	rows int
}

// add appends one row of t per element of each of groups, all of parent
// p: column by column, each column's buffer filled for every group while
// it is at hand, which is faster than a pass over the columns per group.
func (b *rowBuffer[P, E]) add(t *table[P, E], p P, groups ...[]E) {
	if b.cols == nil {
		b.cols = t.define()
	}
	for _, c := range b.cols {
		for _, es := range groups {
			c.add(p, es)
		}
	}
	for _, es := range groups {
		b.rows += len(es)
	}
}

// Rows is the number of rows buffered.
func (b *rowBuffer[P, E]) Rows() int { return b.rows }

// Reset empties the buffer.
func (b *rowBuffer[P, E]) Reset() {
	for _, c := range b.cols {
		c.reset()
	}
	b.rows = 0
}

// insert sends the buffered rows to t as one INSERT. The buffer is
// unchanged, so a failed insert can be retried.
func (b *rowBuffer[P, E]) insert(ctx context.Context, conn driver.Conn, t *table[P, E]) error {
	if b.rows == 0 {
		return nil
	}
	return insertBuffers(ctx, conn, t.name, t.insert, b.cols)
}

// insertSQL is the INSERT naming every column of cols, in order
// (PrepareBatch needs the explicit list on 18.16).
func insertSQL[C buffer](table string, cols []C) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name()
	}
	return "INSERT INTO " + table + " (" + strings.Join(names, ", ") + ")"
}

// columnTypes maps each column of cols to its ClickHouse type.
func columnTypes[C buffer](cols []C) map[string]string {
	m := make(map[string]string, len(cols))
	for _, c := range cols {
		m[c.name()] = c.chType()
	}
	return m
}

// insertBuffers sends the buffered columns of table as one INSERT (query
// is insertSQL's); the buffers are unchanged, so a failed insert can be
// retried.
func insertBuffers[C buffer](ctx context.Context, conn driver.Conn, table, query string, cols []C) error {
	batch, err := conn.PrepareBatch(ctx, query)
	if err != nil {
		return fmt.Errorf("preparing %s insert: %w", table, err)
	}
	for i, c := range cols {
		if err := batch.Column(i).Append(c.values()); err != nil {
			batch.Abort()
			return fmt.Errorf("appending %s column %s: %w", table, c.name(), err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("sending %s insert: %w", table, err)
	}
	return nil
}

// storedIDs runs query, which selects the ids (as strings) that a table
// already holds among those in args, and returns them: what is looks
// for, in its errors ("runs", "NEL batches").
func storedIDs(ctx context.Context, conn driver.Conn, what, query string, args ...any) (map[uuid.UUID]bool, error) {
	stored := map[uuid.UUID]bool{}
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("looking for %s already stored: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("looking for %s already stored: %w", what, err)
		}
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("looking for %s already stored: %w", what, err)
		}
		stored[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("looking for %s already stored: %w", what, err)
	}
	return stored, nil
}
