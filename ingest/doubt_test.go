package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// cutConn is ClickHouse as a server killed in the middle of an insert
// leaves it: when armed, the next insert into samples is applied with only
// some of the views attached (those of the tables in got), and its answer
// is lost. dead then fails everything after it, as a process that stopped
// there would never speak again.
type cutConn struct {
	driver.Conn
	t    testing.TB
	mu   sync.Mutex
	got  []string // the derived tables whose views run before the cut
	cut  func()   // called after the cut insert, before its error is returned
	arm  atomic.Bool
	dead atomic.Bool
	cuts atomic.Int32
}

var errCut = errors.New("read: EOF (cut)")

func (c *cutConn) PrepareBatch(ctx context.Context, query string, opts ...driver.PrepareBatchOption) (driver.Batch, error) {
	if c.dead.Load() {
		return nil, errCut
	}
	if !c.arm.CompareAndSwap(true, false) {
		return c.Conn.PrepareBatch(ctx, query, opts...)
	}
	c.mu.Lock()
	got := c.got
	c.mu.Unlock()
	reattach := storetest.DetachViews(c.t, c.Conn, got)
	b, err := c.Conn.PrepareBatch(ctx, query, opts...)
	if err != nil {
		reattach()
		c.t.Errorf("preparing the cut insert: %v", err)
		return nil, err
	}
	return &cutBatch{Batch: b, c: c, reattach: reattach}, err
}

func (c *cutConn) Query(ctx context.Context, q string, args ...any) (driver.Rows, error) {
	if c.dead.Load() {
		return nil, errCut
	}
	return c.Conn.Query(ctx, q, args...)
}

func (c *cutConn) QueryRow(ctx context.Context, q string, args ...any) driver.Row {
	if c.dead.Load() {
		return c.Conn.QueryRow(ctx, "SELECT throwIf(1, 'cut')")
	}
	return c.Conn.QueryRow(ctx, q, args...)
}

func (c *cutConn) Exec(ctx context.Context, q string, args ...any) error {
	if c.dead.Load() {
		return errCut
	}
	return c.Conn.Exec(ctx, q, args...)
}

type cutBatch struct {
	driver.Batch
	c        *cutConn
	reattach func()
}

func (b *cutBatch) Send() error {
	c := b.c
	err := b.Batch.Send()
	b.reattach()
	if err != nil {
		c.t.Errorf("the cut insert itself failed: %v", err)
	}
	if c.cut != nil {
		c.cut()
	}
	c.cuts.Add(1)
	return errCut
}

// derivedExact fails t unless every derived table matches samples and
// samples holds exactly the runs acknowledged.
func derivedExact(t *testing.T, conn driver.Conn, runs int) {
	t.Helper()
	if n := countRows(t, conn, "SELECT uniqExact(run_id) FROM samples"); n != uint64(runs) {
		t.Errorf("samples holds %d runs, want the %d acknowledged", n, runs)
	}
	if n := countRows(t, conn, "SELECT count() FROM runs"); n != uint64(runs) {
		t.Errorf("runs holds %d rows, want one for each of the %d runs", n, runs)
	}
	if n := countRows(t, conn, "SELECT sum(runs) FROM run_counts"); n != uint64(runs) {
		t.Errorf("run_counts counts %d runs, want %d", n, runs)
	}
	now := time.Now()
	diffs, err := store.Check(context.Background(), conn, now.Add(-48*time.Hour), now.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("%s, hour %s: %d in the table, %d from samples", d.Table, d.Hour.Format(time.DateTime), d.Present, d.Expected)
	}
}

// waitExact waits until samples holds runs runs and every derived table
// matches it.
func waitExact(t *testing.T, conn driver.Conn, runs int) {
	t.Helper()
	waitFor(t, "the derived tables to match samples", func() bool {
		if countRows(t, conn, "SELECT uniqExact(run_id) FROM samples") != uint64(runs) {
			return false
		}
		now := time.Now()
		diffs, err := store.Check(context.Background(), conn, now.Add(-48*time.Hour), now.Add(2*time.Hour))
		return err == nil && len(diffs) == 0
	})
}

// TestInDoubtInsertCompleted cuts inserts of a running pipeline between
// the views (16 cut points: none of the views, all of them, and subsets),
// losing each insert's answer: the pipeline's retry completes every
// derived table, and each acknowledged run is counted once everywhere.
func TestInDoubtInsertCompleted(t *testing.T) {
	conn := &cutConn{Conn: testDB(t), t: t}
	p := startPipeline(t, &Pipeline{Conn: conn, Dir: t.TempDir(), FlushInterval: 20 * time.Millisecond})
	tables := store.DerivedTables()
	rng := rand.New(rand.NewPCG(44, 3))
	runs := 0
	for i := range 16 {
		got := tables
		if i > 0 {
			got = nil
			for _, name := range tables {
				if i > 1 && rng.IntN(2) == 0 {
					got = append(got, name)
				}
			}
		}
		conn.mu.Lock()
		conn.got = got
		conn.mu.Unlock()
		conn.arm.Store(true)
		for range 1 + rng.IntN(5) {
			run := testRun(t, fmt.Sprintf("doubt%d", i%2))
			if rng.IntN(3) == 0 {
				run.Report.Samples[len(run.Report.Samples)-1].Error = "timeout"
			}
			if err := p.Accept(context.Background(), run); err != nil {
				t.Fatal(err)
			}
			runs++
		}
		waitFor(t, "the cut insert", func() bool { return conn.cuts.Load() == int32(i+1) })
		waitExact(t, conn.Conn, runs)
	}
	derivedExact(t, conn.Conn, runs)
}

// TestInDoubtInsertCompletedAfterCrash cuts an insert between the views
// and stops the process there (its connection dead from then on, its
// spool and in-doubt record copied as a crash leaves them): the next
// process completes the derived tables before it replays the spool.
func TestInDoubtInsertCompletedAfterCrash(t *testing.T) {
	for _, got := range [][]string{nil, {"runs", "samples_rollup"}, {"run_facts", "run_counts", "failure_counts"}} {
		t.Run(fmt.Sprint(len(got)), func(t *testing.T) {
			db := testDB(t)
			conn := &cutConn{Conn: db, t: t, got: got}
			dir, crashed := t.TempDir(), t.TempDir()
			conn.cut = func() {
				conn.dead.Store(true)
				copyDir(t, dir, crashed)
			}
			p := startPipeline(t, &Pipeline{Conn: conn, Dir: dir, FlushInterval: 20 * time.Millisecond})
			for range 5 {
				if err := p.Accept(context.Background(), testRun(t, "crash")); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "the first inserts", func() bool { return countRows(t, db, "SELECT uniqExact(run_id) FROM samples") == 5 })
			conn.arm.Store(true)
			for range 4 {
				run := testRun(t, "crash")
				run.Report.Samples[0].Error = "timeout"
				if err := p.Accept(context.Background(), run); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "the cut insert", func() bool { return conn.cuts.Load() == 1 })
			if _, err := os.Stat(filepath.Join(crashed, doubtFileName)); err != nil {
				t.Fatalf("no in-doubt record left by the crash: %v", err)
			}
			startPipeline(t, &Pipeline{Conn: db, Dir: crashed, FlushInterval: 20 * time.Millisecond})
			waitExact(t, db, 9)
			derivedExact(t, db, 9)
		})
	}
}

// copyDir copies the files of dir into to, as they are now.
func copyDir(t testing.TB, dir, to string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Error(err)
		return
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(to, e.Name()), b, 0o600)
		}
		if err != nil {
			t.Error(err)
		}
	}
}
