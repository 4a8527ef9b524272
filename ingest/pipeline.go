package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

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

// Pipeline takes enriched runs to ClickHouse without losing any it has
// acknowledged. Accept writes the run to an append-only, checksummed spool
// on disk (one fsync shared by all concurrent Accepts — group commit) and
// only then returns; the run also goes to a bounded in-memory queue that a
// batcher inserts from, flushing on size, on a jittered interval and at
// shutdown. When ClickHouse is down or slow and the queue fills, the batcher
// later reads the spool instead, in order; a spool segment is deleted only
// once all its rows are inserted, and segments left by an earlier process are
// replayed at Start. Replays are idempotent: rows are keyed by (site, day,
// run_id, seq) in a ReplacingMergeTree, with the receive time fixed before
// spooling. Only when the spool budget is used up does Accept refuse with
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
	// Default 20000.
	BatchRows int
	// FlushInterval is the longest a run waits in memory before it is
	// inserted; each wait is jittered by ±20 %. Default 1 s.
	FlushInterval time.Duration
	// QueueRuns is the capacity of the in-memory queue, in runs. When it is
	// full, runs are still accepted into the spool and read back from disk.
	// Default 4096.
	QueueRuns int
	// SpoolMaxBytes is the disk budget of the spool; beyond it Accept
	// returns ErrBusy. Default 1 GiB.
	SpoolMaxBytes int64
	// SegmentBytes is the size at which a spool segment is closed and a new
	// one begun. Default SpoolMaxBytes/16, at most 4 MiB, at least 64 KiB.
	SegmentBytes int64
	// Retention is how long samples are kept: once a day, month partitions
	// entirely older than this are dropped. 0 keeps everything.
	Retention time.Duration
	// InsertTimeout bounds one insert attempt. Default 30 s.
	InsertTimeout time.Duration
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

	// Spool state shared by the writer and the batcher.
	mu         sync.Mutex
	segs       []*segment // on disk, oldest first
	spoolBytes int64      // bytes in segs
	reserved   int64      // bytes of Accepts waiting for the writer
	inserted   position   // every record up to here is in ClickHouse
	disk       bool       // the queue overflowed: the batcher reads the spool from diskPos
	diskPos    position
	nextID     uint64

	// Writer-owned.
	f      *os.File
	active *segment
	buf    []byte

	// Batcher-owned.
	batch   store.Batch
	pending []queued // read from the spool, not yet inserted
}

// segment is a spool file. size counts bytes that are durable.
type segment struct {
	id     uint64
	size   int64
	sealed bool // no more writes; deletable once fully inserted
}

// position is the offset just past a record in a segment. Records are
// ordered by (seg, off), and inserted in that order.
type position struct {
	seg uint64
	off int64
}

func (a position) less(b position) bool {
	return a.seg < b.seg || (a.seg == b.seg && a.off < b.off)
}

// queued is a durable run waiting for its insert, and where it is spooled.
type queued struct {
	run *store.Run
	pos position
}

type writeReq struct {
	frame []byte // record payload
	run   *store.Run
	done  chan error
}

func (p *Pipeline) batchRows() int {
	if p.BatchRows > 0 {
		return p.BatchRows
	}
	return 20000
}

func (p *Pipeline) flushInterval() time.Duration {
	if p.FlushInterval > 0 {
		return p.FlushInterval
	}
	return time.Second
}

func (p *Pipeline) spoolMax() int64 {
	if p.SpoolMaxBytes > 0 {
		return p.SpoolMaxBytes
	}
	return 1 << 30
}

func (p *Pipeline) segmentBytes() int64 {
	if p.SegmentBytes > 0 {
		return p.SegmentBytes
	}
	return min(max(p.spoolMax()/16, 64<<10), 4<<20)
}

func (p *Pipeline) insertTimeout() time.Duration {
	if p.InsertTimeout > 0 {
		return p.InsertTimeout
	}
	return 30 * time.Second
}

func (p *Pipeline) segPath(id uint64) string { return filepath.Join(p.Dir, segmentName(id)) }

// Start recovers the spool — checking every segment left by an earlier
// process, quarantining corrupt ones and queueing the rest for replay — and
// starts the writer, the batcher and the daily retention job.
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
		queueRuns = 4096
	}
	p.queue = make(chan queued, queueRuns)
	m, err := newPipelineMetrics(p.Registerer, func() float64 { return float64(len(p.queue)) })
	if err != nil {
		return fmt.Errorf("registering ingest metrics: %w", err)
	}
	p.m = m
	if err := os.MkdirAll(p.Dir, 0o750); err != nil {
		return fmt.Errorf("creating spool directory: %w", err)
	}
	if err := p.recover(); err != nil {
		return err
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
	if p.Retention > 0 {
		p.done.Add(1)
		go p.retentionLoop()
	}
	return nil
}

// recover scans the spool directory at start-up.
func (p *Pipeline) recover() error {
	ids, err := listSegments(p.Dir)
	if err != nil {
		return err
	}
	p.nextID = 1
	if corrupt, err := filepath.Glob(filepath.Join(p.Dir, "*"+corruptExt)); err == nil {
		for _, c := range corrupt {
			if id, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(c), corruptExt), 10, 64); err == nil {
				p.nextID = max(p.nextID, id+1)
			}
		}
	}
	var runs int
	for _, id := range ids {
		p.nextID = max(p.nextID, id+1)
		path := p.segPath(id)
		size, frames, torn, err := checkSegment(path)
		switch {
		case errors.Is(err, errCorrupt):
			to, qerr := quarantine(path)
			if qerr != nil {
				return qerr
			}
			p.m.corrupt.Inc()
			p.log.Error("spool segment is corrupt; quarantined, not replayed — its samples are not in ClickHouse",
				"segment", filepath.Base(path), "moved_to", filepath.Base(to), "err", err)
			continue
		case err != nil:
			return err
		}
		if torn {
			p.log.Warn("spool segment ended in a partly written record (a crash during a write); cut it off — it was never acknowledged",
				"segment", filepath.Base(path), "kept_bytes", size)
		}
		if frames == 0 {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("removing empty spool segment: %w", err)
			}
			continue
		}
		runs += frames
		p.segs = append(p.segs, &segment{id: id, size: size, sealed: true})
		p.spoolBytes += size
	}
	if len(p.segs) > 0 {
		p.disk = true
		p.diskPos = position{seg: p.segs[0].id}
		p.log.Info("replaying spool", "segments", len(p.segs), "runs", runs, "bytes", p.spoolBytes)
	}
	p.updateSpoolGauges()
	return nil
}

func (p *Pipeline) updateSpoolGauges() {
	p.m.spoolBytes.Set(float64(p.spoolBytes))
	p.m.spoolSegments.Set(float64(len(p.segs)))
}

// Accept makes run durable and returns nil, or returns ErrBusy when
// the spool budget is used up, ErrClosed after Shutdown, ctx's error, or a
// spool write error. It never touches ClickHouse.
func (p *Pipeline) Accept(ctx context.Context, run store.Run) error {
	p.acceptMu.RLock()
	if !p.started || p.closed {
		p.acceptMu.RUnlock()
		return ErrClosed
	}
	p.inflight.Add(1)
	p.acceptMu.RUnlock()
	defer p.inflight.Done()

	frame, err := appendRecord(nil, &run)
	if err != nil {
		return err
	}
	// From here on the run's wire bytes are the frame's: the caller may
	// reuse its buffer once Accept returns.
	run.Wire = frame[len(frame)-len(run.Wire):]
	req := &writeReq{frame: frame, run: &run, done: make(chan error, 1)}
	n := int64(len(req.frame) + frameHeaderLen)
	p.mu.Lock()
	if p.spoolBytes+p.reserved+n > p.spoolMax() {
		p.mu.Unlock()
		p.m.busy.Inc()
		return ErrBusy
	}
	p.reserved += n
	p.mu.Unlock()

	select {
	case p.reqs <- req:
	case <-ctx.Done():
		p.mu.Lock()
		p.reserved -= n
		p.mu.Unlock()
		return ctx.Err()
	}
	// Wait for the group commit even if ctx ends: the write is under way,
	// and the caller must not be told "failed" for a run that is stored.
	if err := <-req.done; err != nil {
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

func (p *Pipeline) liveLoop() {
	defer p.done.Done()
	for run := range p.live {
		p.Feed.Publish(run)
	}
}

// writeLoop is the only writer of spool files. It takes every request that
// is waiting, writes them with one write and one fsync, then answers them
// all: concurrent Accepts share the cost of durability.
func (p *Pipeline) writeLoop() {
	defer close(p.writerDone)
	var group []*writeReq
	for {
		req, ok := <-p.reqs
		if !ok {
			p.sealActive()
			return
		}
		group = append(group[:0], req)
		size := len(req.frame)
	more:
		for len(group) < 4096 && size < 8<<20 {
			select {
			case r, ok := <-p.reqs:
				if !ok {
					break more
				}
				group = append(group, r)
				size += len(r.frame)
			default:
				break more
			}
		}
		err := p.writeGroup(group)
		for _, r := range group {
			r.done <- err
		}
		clear(group)
	}
}

func (p *Pipeline) writeGroup(group []*writeReq) error {
	var reserved int64
	for _, r := range group {
		reserved += int64(len(r.frame) + frameHeaderLen)
	}
	release := func() {
		p.mu.Lock()
		p.reserved -= reserved
		p.mu.Unlock()
	}
	if err := p.ensureSegment(); err != nil {
		release()
		return err
	}
	buf := p.buf[:0]
	for _, r := range group {
		buf = appendFrame(buf, r.frame)
	}
	p.buf = buf
	start := p.active.size
	_, err := p.f.Write(buf)
	if err == nil {
		err = p.f.Sync()
	}
	if err != nil {
		// What was written may be partial: cut the file back to what is
		// known durable and continue in a fresh segment.
		p.f.Truncate(start)
		p.sealActive()
		release()
		p.log.Error("writing the spool failed; reports are refused until it works again", "dir", p.Dir, "err", err)
		return fmt.Errorf("writing spool: %w", err)
	}
	p.m.fsyncs.Inc()

	p.mu.Lock()
	defer p.mu.Unlock()
	p.reserved -= reserved
	p.active.size += int64(len(buf))
	p.spoolBytes += int64(len(buf))
	p.updateSpoolGauges()
	off := start
	for _, r := range group {
		from := off
		off += int64(len(r.frame) + frameHeaderLen)
		if p.disk {
			continue
		}
		select {
		case p.queue <- queued{run: r.run, pos: position{p.active.id, off}}:
		default:
			// Queue full: from this record on, the batcher reads the spool.
			p.disk = true
			p.diskPos = position{p.active.id, from}
			p.m.spills.Inc()
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

// ensureSegment opens a new segment when there is none, or when the active
// one is large enough to close: at SegmentBytes, or earlier once everything
// in it has been inserted (so idle spools do not keep old rows around).
func (p *Pipeline) ensureSegment() error {
	if p.active != nil {
		p.mu.Lock()
		size := p.active.size
		done := !p.inserted.less(position{p.active.id, size})
		p.mu.Unlock()
		if size >= p.segmentBytes() || (done && size >= p.segmentBytes()/16) {
			p.sealActive()
		}
	}
	if p.active != nil {
		return nil
	}
	p.mu.Lock()
	id := p.nextID
	p.nextID++
	p.mu.Unlock()
	path := p.segPath(id)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("creating spool segment: %w", err)
	}
	if _, err := f.WriteString(segmentMagic); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(p.Dir)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("creating spool segment: %w", err)
	}
	p.f = f
	p.active = &segment{id: id, size: int64(len(segmentMagic))}
	p.mu.Lock()
	p.segs = append(p.segs, p.active)
	p.spoolBytes += p.active.size
	p.updateSpoolGauges()
	p.mu.Unlock()
	return nil
}

// sealActive closes the active segment; it is deleted once inserted.
func (p *Pipeline) sealActive() {
	if p.active == nil {
		return
	}
	if err := p.f.Close(); err != nil {
		p.log.Warn("closing spool segment", "err", err)
	}
	p.mu.Lock()
	p.active.sealed = true
	drop := p.dropInsertedLocked()
	p.mu.Unlock()
	p.f, p.active = nil, nil
	p.removeSegments(drop)
}

// dropInsertedLocked forgets sealed segments whose records are all in
// ClickHouse and returns their paths for removal.
func (p *Pipeline) dropInsertedLocked() []string {
	var drop []string
	keep := p.segs[:0]
	for _, s := range p.segs {
		if s.sealed && (s.size <= int64(len(segmentMagic)) || !p.inserted.less(position{s.id, s.size})) {
			drop = append(drop, p.segPath(s.id))
			p.spoolBytes -= s.size
			continue
		}
		keep = append(keep, s)
	}
	clear(p.segs[len(keep):])
	p.segs = keep
	p.updateSpoolGauges()
	return drop
}

func (p *Pipeline) removeSegments(paths []string) {
	for _, path := range paths {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			p.log.Warn("removing inserted spool segment", "err", err)
		}
	}
}

// markInserted records that every record up to pos is in ClickHouse.
func (p *Pipeline) markInserted(pos position) {
	p.mu.Lock()
	if p.inserted.less(pos) {
		p.inserted = pos
	}
	drop := p.dropInsertedLocked()
	p.mu.Unlock()
	p.removeSegments(drop)
}

// batchLoop inserts runs in spool order until Shutdown.
func (p *Pipeline) batchLoop() {
	defer close(p.batcherDone)
	for {
		batch, last := p.nextBatch()
		if len(batch) > 0 {
			if !p.insertRetry(batch) {
				return
			}
			p.markInserted(batch[len(batch)-1].pos)
		}
		if last {
			return
		}
	}
}

// nextBatch collects the next batch in spool order: runs already read back
// from the spool, then the in-memory queue (waiting up to a jittered
// FlushInterval for it to fill), then the spool again when the queue has
// overflowed. last is true when shutting down and nothing is left.
func (p *Pipeline) nextBatch() (batch []queued, last bool) {
	limit := p.batchRows()
	rows := 0
	add := func(q queued) {
		batch = append(batch, q)
		rows += max(sampleCount(q.run), 1)
	}
	takePending := func() {
		n := 0
		for n < len(p.pending) && rows < limit {
			add(p.pending[n])
			n++
		}
		p.pending = p.pending[n:]
	}
	if len(p.pending) > 0 {
		takePending()
		return batch, false
	}
	var timer *time.Timer
	var timerC <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	closing := false
	for {
	fill:
		for rows < limit {
			select {
			case q := <-p.queue:
				add(q)
			default:
				break fill
			}
		}
		if rows >= limit {
			return batch, false
		}
		p.mu.Lock()
		disk := p.disk
		p.mu.Unlock()
		if disk {
			if len(batch) > 0 {
				// Insert what came before the overflow first.
				return batch, false
			}
			p.pending = p.readSpool()
			if len(p.pending) > 0 {
				takePending()
				return batch, false
			}
			continue
		}
		if closing {
			return batch, len(batch) == 0
		}
		if len(batch) > 0 && timer == nil {
			timer = time.NewTimer(jitter(p.flushInterval()))
			timerC = timer.C
		}
		select {
		case q := <-p.queue:
			add(q)
		case <-timerC:
			return batch, false
		case <-p.wake:
		case <-p.closing:
			closing = true
		}
	}
}

// jitter spreads d by ±20 % so that many collectors do not insert in step.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.4-0.2)*float64(d))
}

// readSpool reads the records the batcher has not seen from the spool, one
// segment (or the unread tail of the active one) at a time, validating the
// whole range before returning any of it. When it has caught up with the
// writer it switches the batcher back to the in-memory queue.
func (p *Pipeline) readSpool() []queued {
	for {
		p.mu.Lock()
		if !p.disk {
			p.mu.Unlock()
			return nil
		}
		var seg *segment
		for _, s := range p.segs {
			if s.id >= p.diskPos.seg {
				seg = s
				break
			}
		}
		if seg == nil {
			p.disk = false
			p.mu.Unlock()
			return nil
		}
		if seg.id != p.diskPos.seg || p.diskPos.off < int64(len(segmentMagic)) {
			p.diskPos = position{seg.id, int64(len(segmentMagic))}
		}
		id, from, to, sealed := seg.id, p.diskPos.off, seg.size, seg.sealed
		if from >= to {
			if sealed {
				p.diskPos = position{id + 1, 0}
			} else {
				// Caught up with the writer: new records go to the queue.
				p.disk = false
			}
			p.mu.Unlock()
			if !sealed {
				return nil
			}
			continue
		}
		p.mu.Unlock()

		path := p.segPath(id)
		runs, err := p.readFrames(path, id, from, to)
		if err != nil {
			p.m.corrupt.Inc()
			p.mu.Lock()
			p.diskPos = position{id, to}
			p.mu.Unlock()
			if sealed {
				p.mu.Lock()
				for i, s := range p.segs {
					if s.id == id {
						p.spoolBytes -= s.size
						p.segs = append(p.segs[:i], p.segs[i+1:]...)
						break
					}
				}
				p.updateSpoolGauges()
				p.mu.Unlock()
				to, qerr := quarantine(path)
				p.log.Error("spool segment is corrupt; quarantined, not replayed — its samples are not in ClickHouse",
					"segment", filepath.Base(path), "moved_to", filepath.Base(to), "err", err, "quarantine_err", qerr)
			} else {
				p.log.Error("spool segment being written is corrupt; skipped the unreadable range",
					"segment", filepath.Base(path), "from", from, "to", to, "err", err)
			}
			continue
		}
		p.mu.Lock()
		p.diskPos = position{id, to}
		p.mu.Unlock()
		return runs
	}
}

func (p *Pipeline) readFrames(path string, id uint64, from, to int64) ([]queued, error) {
	data, err := readRange(path, from, to)
	if err != nil {
		return nil, err
	}
	frames, tail, err := scanFrames(data, from)
	if err != nil {
		return nil, err
	}
	if tail != to {
		return nil, fmt.Errorf("%w: record cut short at offset %d", errCorrupt, tail)
	}
	runs := make([]queued, len(frames))
	for i, f := range frames {
		run, err := decodeRecord(f.payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errCorrupt, err)
		}
		runs[i] = queued{run: &run, pos: position{id, f.end}}
	}
	return runs, nil
}

// insertRetry inserts batch, retrying with backoff until it succeeds; it
// gives up only when Shutdown's deadline passes, leaving the rows in the
// spool for the next start.
func (p *Pipeline) insertRetry(batch []queued) bool {
	p.batch.Reset()
	for _, q := range batch {
		p.batch.Add(q.run)
	}
	rows := p.batch.Rows()
	backoff := 100 * time.Millisecond
	var failingSince time.Time
	var lastLog time.Time
	for {
		ctx, cancel := context.WithTimeout(p.abort, p.insertTimeout())
		start := time.Now()
		err := p.batch.Insert(ctx, p.Conn)
		cancel()
		if err == nil {
			p.m.insertBatches.Inc()
			p.m.insertRows.Add(float64(rows))
			p.m.insertSeconds.Observe(time.Since(start).Seconds())
			if !failingSince.IsZero() {
				p.log.Info("ClickHouse inserts work again", "after", time.Since(failingSince).Round(time.Millisecond))
			}
			return true
		}
		p.m.insertErrors.Inc()
		if failingSince.IsZero() {
			failingSince = time.Now()
		}
		if time.Since(lastLog) > time.Minute {
			lastLog = time.Now()
			p.log.Warn("inserting into ClickHouse failed; reports are kept in the spool and retried", "rows", rows, "err", err)
		}
		select {
		case <-time.After(backoff):
		case <-p.abort.Done():
			return false
		}
		backoff = min(backoff*2, 5*time.Second)
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
		p.mu.Lock()
		left := p.spoolBytes
		p.mu.Unlock()
		err = fmt.Errorf("shutting down ingest: %d spool bytes not yet in ClickHouse, kept for the next start: %w", left, ctx.Err())
	}
	p.cancelAbort()
	p.done.Wait()
	p.markInserted(position{})
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
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{QueuedRuns: len(p.queue), SpoolBytes: p.spoolBytes, SpoolSegments: len(p.segs), Replaying: p.disk}
}

func sampleCount(run *store.Run) int {
	if run.Report == nil {
		return 0
	}
	return len(run.Report.Samples)
}
