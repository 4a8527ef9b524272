package ingest

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/ingest/spool"
	"github.com/h3rum/h3rum/ingest/store"
)

// The batcher: it takes durable runs in spool order, from the in-memory
// queue or read back from the spool, and inserts them in batches flushed on
// size or a jittered interval, retrying until ClickHouse takes them.

// queued is a durable run — or upload of NEL reports — waiting for its
// insert, and where it is spooled.
type queued struct {
	run *store.Run
	nel *store.NELBatch
	pos spool.Position
}

// batchLoop inserts runs in spool order until Shutdown, once Ready.
func (p *Pipeline) batchLoop() {
	defer close(p.batcherDone)
	if p.Ready != nil {
		select {
		case <-p.Ready:
		case <-p.closing:
			return // never ready: everything accepted is in the spool
		case <-p.abort.Done():
			return
		}
	}
	if len(p.doubt.block) > 0 && !p.insertRetry(nil) {
		return
	}
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
		rows += max(rowCount(q), 1)
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

// insertRetry inserts batch, retrying with backoff until it succeeds; it
// gives up only when Shutdown's deadline passes, leaving the rows in the
// spool for the next start. An insert that may repeat an earlier one — runs
// replayed from a spool an earlier process left, or any attempt after a
// failed one, which the server may have committed before the error —
// first leaves out the runs ClickHouse already holds, and every attempt
// first completes the derived tables of the insert in doubt (doubt.go):
// every run is stored once, in samples and in every table its views fill.
func (p *Pipeline) insertRetry(batch []queued) bool {
	runs := make([]*store.Run, 0, len(batch))
	var nels []*store.NELBatch
	suspect := false
	for _, q := range batch {
		if q.nel != nil {
			nels = append(nels, q.nel)
		} else {
			runs = append(runs, q.run)
		}
		suspect = suspect || q.pos.Segment <= p.replayUpTo
	}
	backoff := 100 * time.Millisecond
	var failingSince time.Time
	var lastLog time.Time
	for {
		ctx, cancel := context.WithTimeout(p.abort, p.insertTimeout())
		start := time.Now()
		err := p.doubt.complete(ctx, p)
		rows, nelRows := 0, 0
		if err == nil && len(runs) > 0 {
			rows, err = p.insert(ctx, runs, suspect)
		}
		if err == nil {
			nelRows, err = p.insertNEL(ctx, nels, suspect)
		}
		cancel()
		if err == nil {
			if len(batch) > 0 { // not the completion alone that starts a replay
				p.m.insertBatches.Inc()
				p.m.insertRows.Add(float64(rows))
				p.m.insertRowsNEL.Add(float64(nelRows))
				p.m.insertSeconds.Observe(time.Since(start).Seconds())
			}
			if !failingSince.IsZero() {
				p.log.Info("ClickHouse inserts work again", "after", time.Since(failingSince).Round(time.Millisecond))
			}
			return true
		}
		suspect = true
		p.m.insertErrors.Inc()
		if failingSince.IsZero() {
			failingSince = time.Now()
		}
		if time.Since(lastLog) > time.Minute {
			lastLog = time.Now()
			p.log.Warn("inserting into ClickHouse failed; reports are kept in the spool and retried", "runs", len(runs), "err", err)
		}
		select {
		case <-time.After(backoff):
		case <-p.abort.Done():
			return false
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// insert sends runs as one INSERT and returns the rows sent; with
// skipStored it first leaves out the runs already in ClickHouse.
func (p *Pipeline) insert(ctx context.Context, runs []*store.Run, skipStored bool) (int, error) {
	var stored map[uuid.UUID]bool
	if skipStored {
		var err error
		if stored, err = p.storeCluster().Stored(ctx, p.Conn, runs); err != nil {
			return 0, err
		}
	}
	p.batch.Reset()
	sent := runs[:0:0]
	for _, r := range runs {
		if r.Report == nil || stored[uuid.UUID(r.Report.RunID)] {
			continue
		}
		p.batch.Add(r)
		sent = append(sent, r)
	}
	if err := p.doubt.record(store.BlockOf(sent)); err != nil {
		return 0, err
	}
	if err := p.batch.Insert(ctx, p.Conn); err != nil {
		return 0, err
	}
	if err := p.doubt.clear(); err != nil {
		return 0, err
	}
	p.m.replaySkipped.Add(float64(len(stored)))
	return p.batch.Rows(), nil
}

// insertNEL sends the reports of batches as one INSERT into nel_reports and
// returns the rows sent; with skipStored it first leaves out the batches
// already there, as insert does for runs.
func (p *Pipeline) insertNEL(ctx context.Context, batches []*store.NELBatch, skipStored bool) (int, error) {
	if len(batches) == 0 {
		return 0, nil
	}
	var stored map[uuid.UUID]bool
	if skipStored {
		var err error
		if stored, err = p.storeCluster().NELStored(ctx, p.Conn, batches); err != nil {
			return 0, err
		}
	}
	p.nelRows.Reset()
	for _, b := range batches {
		if !stored[b.ID] {
			p.nelRows.Add(b)
		}
	}
	if err := p.nelRows.Insert(ctx, p.Conn); err != nil {
		return 0, err
	}
	p.m.replaySkippedNEL.Add(float64(len(stored)))
	return p.nelRows.Rows(), nil
}
