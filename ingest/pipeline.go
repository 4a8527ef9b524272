package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/ingest/spool"
	"github.com/h3rum/h3rum/ingest/store"
)

// ErrClosed is returned by Accept after Shutdown has begun.
var ErrClosed = errors.New("ingest pipeline is shutting down")

// ErrBusy is returned by Accept when the spool budget is used up; the
// caller answers 503 with Retry-After.
var ErrBusy = errors.New("ingest queue and spool are full")

// Feed is told of each run once it is durable: the live view of what is
// arriving. Ingest owns the interface; the reports implement it.
type Feed interface {
	Publish(run store.Run)
}

// The Pipeline's defaults, which `h3rum serve`'s flags show.
const (
	DefaultBatchRows     = 20000                  // sample rows that trigger an insert
	DefaultFlushInterval = time.Second            // longest a run waits in memory
	DefaultCommitDelay   = 500 * time.Microsecond // group commit's wait for more reports
	DefaultQueueRuns     = 4096                   // runs held in memory before the batcher reads the spool
	DefaultInsertTimeout = 30 * time.Second       // one insert attempt's bound, retried after it
)

// NoCommitDelay, as a Pipeline's CommitDelay, acknowledges each report as
// soon as its own fsync is done.
const NoCommitDelay time.Duration = -1

// Pipeline takes enriched runs (and uploads of Network Error Logging
// reports, AcceptNEL) to ClickHouse without losing any it has
// acknowledged. Accept writes the run to an append-only, checksummed spool
// on disk (one fsync shared by all concurrent Accepts — group commit) and
// only then returns; the run also goes to a bounded in-memory queue that a
// batcher inserts from, flushing on size, on a jittered interval and at
// shutdown. When ClickHouse is down or slow and the queue fills, the batcher
// later reads the spool instead, in order; a spool segment is deleted only
// once all its rows are inserted, and segments left by an earlier process are
// replayed at Start. Each run is stored once: a replayed or retried insert
// first leaves out the runs ClickHouse already holds (see insertRetry), and
// the receive time is fixed before spooling, so a replayed row equals the
// original. Only when the spool budget is used up does Accept refuse with
// ErrBusy.
//
// Set the fields, call Start, and Shutdown when done.
type Pipeline struct {
	// Conn is the ClickHouse connection (native protocol). Required.
	Conn driver.Conn
	// Dir is the spool directory, e.g. "<data-dir>/spool"; created if
	// missing. Required.
	Dir string
	// BatchRows is the number of sample rows that triggers an insert.
	// Default DefaultBatchRows.
	BatchRows int
	// FlushInterval is the longest a run waits in memory before it is
	// inserted; each wait is jittered by ±20 %. Default
	// DefaultFlushInterval.
	FlushInterval time.Duration
	// CommitDelay is how long the spool writer waits, once a report is
	// waiting, for more to share its write and fsync (group commit with a
	// commit delay). Under a load of reports each fsync then serves more
	// of them; a lone report is acknowledged that much later. Default
	// DefaultCommitDelay; negative (NoCommitDelay) turns it off.
	CommitDelay time.Duration
	// QueueRuns is the capacity of the in-memory queue, in runs. When it is
	// full, runs are still accepted into the spool and read back from disk.
	// Default DefaultQueueRuns.
	QueueRuns int
	// SpoolMaxBytes is the disk budget of the spool; beyond it Accept
	// returns ErrBusy. Default spool.DefaultMaxBytes (1 GiB).
	SpoolMaxBytes int64
	// SegmentBytes is the size at which a spool segment is closed and a new
	// one begun. Default SpoolMaxBytes/16, at most 4 MiB, at least 64 KiB.
	SegmentBytes int64
	// Retention is how long samples are kept: once a day, month partitions
	// entirely older than this are dropped. 0 keeps everything.
	Retention time.Duration
	// Cluster, in cluster mode, is the ClickHouse cluster Conn's server
	// belongs to: retention then drops partitions of the local tables on
	// every server (store.DropExpiredOnCluster).
	Cluster string
	// ClusterDial, in cluster mode, connects to another server of the
	// cluster by address (store.DB.DialServer): an insert in doubt is
	// completed shard by shard. Without it, one is only checked.
	ClusterDial func(ctx context.Context, addr string) (driver.Conn, error)
	// InsertTimeout bounds one insert attempt. Default DefaultInsertTimeout.
	InsertTimeout time.Duration
	// Ready, when set, holds back every insert until it is closed: the
	// store is unreachable or its schema is being migrated. Runs are
	// accepted into the spool meanwhile. Nil: ready at Start.
	Ready <-chan struct{}
	// Feed, if set, is given each run once it is durable, from a goroutine
	// of its own; when it falls behind by more than 1024 runs, runs are
	// skipped for it (and counted) rather than slowing ingestion.
	Feed Feed
	// Logger receives spool and insert events; nil discards them. Client
	// addresses are never logged.
	Logger *slog.Logger
	// Registerer receives the pipeline's metrics; nil registers none.
	Registerer prometheus.Registerer

	log                     *slog.Logger
	m                       *pipelineMetrics
	reqs                    chan *writeReq
	reqPool                 sync.Pool // *writeReq, see newWriteReq
	queue                   chan queued
	live                    chan store.Run
	wake                    chan struct{}
	closing                 chan struct{}   // closed by Shutdown once no more writes can come
	abort                   context.Context // ends when Shutdown's deadline passes
	cancelAbort             context.CancelFunc
	done                    sync.WaitGroup
	writerDone, batcherDone chan struct{}

	acceptMu sync.RWMutex
	started  bool
	closed   bool
	inflight sync.WaitGroup

	spool spool.Spool

	// Shared by the writer and the batcher.
	mu      sync.Mutex
	written spool.Position // the end of the last record the writer has queued or left in the spool
	disk    bool           // the queue overflowed: the batcher reads the spool after diskPos
	diskPos spool.Position

	// Writer-owned.
	recs [][]byte
	ends []spool.Position

	// Batcher-owned.
	replayUpTo uint64  // segments up to this id were left by an earlier process
	doubt      *doubt  // the insert whose outcome is not known, see doubt.go
	mender     *mender // the hours an insert in doubt left unresolved, see mend.go
	batch      store.Batch
	nelRows    store.NELRows
	pending    []queued // read from the spool, not yet inserted
}

func (p *Pipeline) batchRows() int {
	if p.BatchRows > 0 {
		return p.BatchRows
	}
	return DefaultBatchRows
}

func (p *Pipeline) flushInterval() time.Duration {
	if p.FlushInterval > 0 {
		return p.FlushInterval
	}
	return DefaultFlushInterval
}

func (p *Pipeline) commitDelay() time.Duration {
	if p.CommitDelay == 0 {
		return DefaultCommitDelay
	}
	return max(p.CommitDelay, 0)
}

func (p *Pipeline) insertTimeout() time.Duration {
	if p.InsertTimeout > 0 {
		return p.InsertTimeout
	}
	return DefaultInsertTimeout
}

// Start recovers the spool — checking every segment left by an earlier
// process, quarantining corrupt ones and queueing the rest for replay — and
// starts the writer, the batcher, the mender and the daily retention job.
func (p *Pipeline) Start(ctx context.Context) error {
	p.acceptMu.Lock()
	defer p.acceptMu.Unlock()
	if p.started {
		return errors.New("starting ingest pipeline: already started")
	}
	if p.Conn == nil || p.Dir == "" {
		return errors.New("starting ingest pipeline: Conn and Dir are required")
	}
	p.log = p.Logger
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	queueRuns := p.QueueRuns
	if queueRuns <= 0 {
		queueRuns = DefaultQueueRuns
	}
	p.queue = make(chan queued, queueRuns)
	m, err := newPipelineMetrics(p.Registerer, func() float64 { return float64(len(p.queue)) })
	if err != nil {
		return fmt.Errorf("registering ingest metrics: %w", err)
	}
	p.m = m
	p.spool.Dir, p.spool.MaxBytes, p.spool.SegmentBytes, p.spool.Logger = p.Dir, p.SpoolMaxBytes, p.SegmentBytes, p.log
	p.spool.Metrics = spool.Metrics{Fsyncs: m.fsyncs, Corrupt: m.corrupt, Bytes: m.spoolBytes, Segments: m.spoolSegments}
	left, err := p.spool.Open()
	if err != nil {
		return err
	}
	if p.doubt, err = openDoubt(p.Dir, p.Registerer); err != nil {
		p.spool.Close()
		return err
	}
	if p.mender, err = openMender(p.Dir, p.Registerer); errors.Is(err, errTornMend) {
		p.log.Warn("starting ingest", "err", err)
	} else if err != nil {
		p.doubt.close()
		p.spool.Close()
		return err
	}
	if left.Segments > 0 {
		p.replayUpTo = left.Last.Segment
		p.disk = true
		p.written = left.Last
		p.log.Info("replaying spool", "segments", left.Segments, "runs", left.Records, "bytes", left.Bytes)
	}
	p.reqs = make(chan *writeReq, 1024)
	p.live = make(chan store.Run, 1024)
	p.wake = make(chan struct{}, 1)
	p.closing = make(chan struct{})
	p.abort, p.cancelAbort = context.WithCancel(context.Background())
	p.writerDone = make(chan struct{})
	p.batcherDone = make(chan struct{})
	p.started = true
	go p.writeLoop()
	go p.batchLoop()
	p.done.Add(1)
	go p.liveLoop()
	p.done.Add(1)
	go p.every(mendWait(), p.mend)
	if p.Retention > 0 {
		p.done.Add(1)
		go p.every(time.Minute, p.retain)
	}
	return nil
}

// Accept makes run durable and returns nil, or returns ErrBusy when
// the spool budget is used up, ErrClosed after Shutdown, ctx's error, or a
// spool write error. It never touches ClickHouse. The caller may reuse
// run's wire bytes once Accept returns: the spool has them, and the run
// queued for insert keeps only the decoded report.
func (p *Pipeline) Accept(ctx context.Context, run store.Run) error {
	req := p.newWriteReq()
	defer p.freeWriteReq(req)
	var err error
	if req.frame, err = appendRecord(req.frame[:0], &run); err != nil {
		return err
	}
	run.Wire, run.HandshakeWire = nil, nil
	req.run = &run
	if err := p.accept(ctx, req); err != nil {
		return err
	}
	p.m.acceptedRuns.Inc()
	p.m.acceptedSamples.Add(float64(sampleCount(&run)))
	if p.Feed != nil {
		select {
		case p.live <- run:
		default:
			p.m.liveDropped.Inc()
		}
	}
	return nil
}

// AcceptNEL makes an upload of Network Error Logging reports durable, in
// the same spool as runs and under the same rules as Accept: nil only once
// it is on disk.
func (p *Pipeline) AcceptNEL(ctx context.Context, b store.NELBatch) error {
	req := p.newWriteReq()
	defer p.freeWriteReq(req)
	var err error
	if req.frame, err = appendNELRecord(req.frame[:0], &b); err != nil {
		return err
	}
	req.nel = &b
	if err := p.accept(ctx, req); err != nil {
		return err
	}
	p.m.acceptedNEL.Add(float64(len(b.Reports)))
	return nil
}

// accept hands req's record to the spool writer and returns once it is
// durable.
func (p *Pipeline) accept(ctx context.Context, req *writeReq) error {
	p.acceptMu.RLock()
	if !p.started || p.closed {
		p.acceptMu.RUnlock()
		return ErrClosed
	}
	p.inflight.Add(1)
	p.acceptMu.RUnlock()
	defer p.inflight.Done()

	if !p.spool.Reserve(len(req.frame)) {
		p.m.busy.Inc()
		return ErrBusy
	}
	select {
	case p.reqs <- req:
	case <-ctx.Done():
		p.spool.Release(len(req.frame))
		return ctx.Err()
	}
	// Wait for the group commit even if ctx ends: the write is under way,
	// and the caller must not be told "failed" for a run that is stored.
	return <-req.done
}

func (p *Pipeline) liveLoop() {
	defer p.done.Done()
	for run := range p.live {
		p.Feed.Publish(run)
	}
}

// Shutdown stops accepting, waits for runs being accepted, then inserts
// everything still queued or spooled. If ctx ends first, the remaining runs
// stay in the spool for the next Start and Shutdown returns an error saying
// so. Either way nothing acknowledged is lost.
func (p *Pipeline) Shutdown(ctx context.Context) error {
	p.acceptMu.Lock()
	if !p.started || p.closed {
		p.acceptMu.Unlock()
		return nil
	}
	p.closed = true
	p.acceptMu.Unlock()
	p.inflight.Wait()
	close(p.reqs)
	<-p.writerDone
	close(p.live)
	close(p.closing)
	var err error
	select {
	case <-p.batcherDone:
	case <-ctx.Done():
		p.cancelAbort()
		<-p.batcherDone
		left, _ := p.spool.Stats()
		err = fmt.Errorf("shutting down ingest: %d spool bytes not yet in ClickHouse, kept for the next start: %w", left, ctx.Err())
	}
	p.cancelAbort()
	p.done.Wait()
	p.spool.Ack(spool.Position{})
	if cerr := p.doubt.close(); cerr != nil && err == nil {
		err = fmt.Errorf("shutting down ingest: %w", cerr)
	}
	return err
}

// Stats is a snapshot of the pipeline's backlog.
type Stats struct {
	QueuedRuns    int   // runs in the in-memory queue
	SpoolBytes    int64 // bytes in spool segments not yet fully inserted
	SpoolSegments int
	Replaying     bool // the batcher is reading the spool rather than the queue
}

// Stats returns the current backlog.
func (p *Pipeline) Stats() Stats {
	bytes, segs := p.spool.Stats()
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{QueuedRuns: len(p.queue), SpoolBytes: bytes, SpoolSegments: segs, Replaying: p.disk}
}

func sampleCount(run *store.Run) int {
	if run == nil || run.Report == nil {
		return 0
	}
	return len(run.Report.Samples)
}

// rowCount is the number of rows a queued record inserts.
func rowCount(q queued) int {
	if q.nel != nil {
		return len(q.nel.Reports)
	}
	return sampleCount(q.run)
}
