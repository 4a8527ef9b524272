package ingest

import (
	"fmt"
	"time"

	"github.com/h3rum/h3rum/ingest/spool"
	"github.com/h3rum/h3rum/ingest/store"
)

// The pipeline's side of the spool (package spool): the writer that groups
// concurrent Accepts into one spool write and hands the durable runs to the
// in-memory queue in spool order, and the batcher's reading back of the
// spool once that queue has overflowed. The records are in record.go.

type writeReq struct {
	frame []byte // record payload
	run   *store.Run
	nel   *store.NELBatch // instead of run, for a NEL record
	done  chan error      // the writer's answer, once the record is durable or failed
}

// newWriteReq returns a request from the pipeline's pool: a request, its record
// buffer and its answer channel serve one Accept after another, so that
// accepting a report allocates little beyond the run it queues.
func (p *Pipeline) newWriteReq() *writeReq {
	if r, ok := p.reqPool.Get().(*writeReq); ok {
		return r
	}
	return &writeReq{done: make(chan error, 1)}
}

// freeWriteReq returns r for reuse. The writer must be done with it: it
// never was given r, or it has answered on r.done and that answer was
// received.
func (p *Pipeline) freeWriteReq(r *writeReq) {
	if cap(r.frame) > 64<<10 {
		r.frame = nil // an odd large record: do not keep its buffer around
	}
	r.frame, r.run, r.nel = r.frame[:0], nil, nil
	p.reqPool.Put(r)
}

// writeLoop is the only writer of the spool. Once a request comes, it
// waits CommitDelay, takes every request then waiting, writes them with one
// write and one fsync, then answers them all: concurrent Accepts share the
// cost of durability, so a short wait buys fewer fsyncs and less CPU per
// beacon (BenchmarkIngest measures it).
func (p *Pipeline) writeLoop() {
	defer close(p.writerDone)
	var group []*writeReq
	delay := p.commitDelay()
	for {
		req, ok := <-p.reqs
		if !ok {
			p.spool.Close()
			return
		}
		if delay > 0 {
			time.Sleep(delay)
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

// writeGroup writes group to the spool, then hands each run to the
// in-memory queue in spool order, or, once the queue is full, leaves the
// rest for the batcher to read back from the spool.
func (p *Pipeline) writeGroup(group []*writeReq) error {
	p.recs = p.recs[:0]
	for _, r := range group {
		p.recs = append(p.recs, r.frame)
	}
	var err error
	p.ends, err = p.spool.Write(p.recs, p.ends[:0])
	clear(p.recs)
	if err != nil {
		p.log.Error("writing the spool failed; reports are refused until it works again", "dir", p.Dir, "err", err)
		return err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range group {
		end := p.ends[i]
		if !p.disk {
			select {
			case p.queue <- queued{run: r.run, nel: r.nel, pos: end}:
			default:
				// Queue full: from this record on, the batcher reads the spool.
				p.disk = true
				p.diskPos = p.written
				p.m.spills.Inc()
				select {
				case p.wake <- struct{}{}:
				default:
				}
			}
		}
		p.written = end
	}
	return nil
}

// markInserted records that every record up to pos is in ClickHouse.
func (p *Pipeline) markInserted(pos spool.Position) { p.spool.Ack(pos) }

// readSpool reads the records the batcher has not seen from the spool, one
// segment (or the unread part of the one being written) at a time. When it
// has caught up with the writer it switches the batcher back to the
// in-memory queue.
func (p *Pipeline) readSpool() []queued {
	for {
		p.mu.Lock()
		if !p.disk {
			p.mu.Unlock()
			return nil
		}
		from, to := p.diskPos, p.written
		if !from.Less(to) {
			// Caught up with the writer: new records go to the queue.
			p.disk = false
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()

		recs, next := p.spool.Read(from, to)
		runs, err := decodeRecords(recs)
		if err != nil {
			p.spool.Reject(recs, err)
		}
		p.mu.Lock()
		p.diskPos = next
		p.mu.Unlock()
		if len(runs) > 0 {
			return runs
		}
	}
}

// decodeRecords decodes the records of one spool read; an error means
// none of them can be used.
func decodeRecords(recs []spool.Record) ([]queued, error) {
	runs := make([]queued, len(recs))
	for i, rec := range recs {
		pos := rec.End
		if isNELRecord(rec.Data) {
			b, err := decodeNELRecord(rec.Data)
			if err != nil {
				return nil, fmt.Errorf("record ending at %d: %w", rec.End.Offset, err)
			}
			runs[i] = queued{nel: b, pos: pos}
			continue
		}
		run, err := decodeRecord(rec.Data)
		if err != nil {
			return nil, fmt.Errorf("record ending at %d: %w", rec.End.Offset, err)
		}
		runs[i] = queued{run: &run, pos: pos}
	}
	return runs, nil
}
