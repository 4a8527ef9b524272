// Package spool is an append-only, checksummed log of opaque records on
// disk: records are written in groups with one write and one fsync, each
// given back as the position just past it, read back from a position, and
// deleted a segment at a time once acknowledged.
package spool

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Position is the offset just past a record in a segment. Records are
// ordered by (Segment, Offset); the zero Position is before every record.
type Position struct {
	Segment uint64 // the segment file's id
	Offset  int64
}

// Less reports whether a is before b.
func (a Position) Less(b Position) bool {
	return a.Segment < b.Segment || (a.Segment == b.Segment && a.Offset < b.Offset)
}

// Record is a record read back from the spool and the position just past it.
type Record struct {
	Data []byte
	End  Position
}

// Backlog is what an earlier process left in the spool, found by Open.
type Backlog struct {
	Segments int
	Records  int
	Bytes    int64
	// Last is the end of the last record left; the zero Position when
	// nothing was.
	Last Position
}

// Metrics are the spool's instruments; each may be nil.
type Metrics struct {
	Fsyncs   prometheus.Counter // group writes, one fsync each
	Corrupt  prometheus.Counter // segments quarantined or ranges skipped as corrupt
	Bytes    prometheus.Gauge   // bytes in segments on disk
	Segments prometheus.Gauge   // segment files on disk
}

// DefaultMaxBytes is a spool's disk budget when none is set: 1 GiB.
const DefaultMaxBytes = 1 << 30

// Spool is a directory of segment files (the format is in segment.go).
// One goroutine writes (Write, Close); another may read and acknowledge
// (Read, Reject, Ack) at the same time; Reserve, Release and Stats may be
// called from any goroutine.
//
// Set the fields, call Open, then Write; Close when no more writes come.
type Spool struct {
	// Dir is the spool directory; created if missing. Required.
	Dir string
	// MaxBytes is the disk budget: Reserve refuses a record beyond it.
	// Default DefaultMaxBytes.
	MaxBytes int64
	// SegmentBytes is the size at which a segment is closed and a new one
	// begun. Default MaxBytes/16, at most 4 MiB, at least 64 KiB.
	SegmentBytes int64
	// Logger receives recovery and corruption events; nil discards them.
	Logger *slog.Logger
	// Metrics are updated as the spool works.
	Metrics Metrics

	log *slog.Logger

	mu       sync.Mutex
	segs     []*segment // on disk, oldest first
	bytes    int64      // bytes in segs
	reserved int64      // bytes of records reserved but not yet written
	acked    Position   // every record up to here is acknowledged
	nextID   uint64

	// Writer-owned.
	f      *os.File
	active *segment
	buf    []byte
}

// segment is a spool file. size counts bytes that are durable.
type segment struct {
	id     uint64
	size   int64
	sealed bool // no more writes; deletable once fully acknowledged
}

func (s *Spool) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return DefaultMaxBytes
}

func (s *Spool) segmentBytes() int64 {
	if s.SegmentBytes > 0 {
		return s.SegmentBytes
	}
	return min(max(s.maxBytes()/16, 64<<10), 4<<20)
}

func (s *Spool) segPath(id uint64) string { return filepath.Join(s.Dir, SegmentName(id)) }

// Open creates Dir if needed and checks every segment left by an earlier
// process: a corrupt one is quarantined (renamed, kept for inspection, not
// read), a record torn by a crash at the end of one is cut off, and an
// empty one is removed. The rest stay for Read, from the zero Position up
// to the Backlog's Last.
func (s *Spool) Open() (Backlog, error) {
	s.log = s.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(s.Dir, 0o750); err != nil {
		return Backlog{}, fmt.Errorf("creating spool directory: %w", err)
	}
	ids, err := ListSegments(s.Dir)
	if err != nil {
		return Backlog{}, err
	}
	s.nextID = 1
	if corrupt, err := filepath.Glob(filepath.Join(s.Dir, "*"+corruptExt)); err == nil {
		for _, c := range corrupt {
			if id, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(c), corruptExt), 10, 64); err == nil {
				s.nextID = max(s.nextID, id+1)
			}
		}
	}
	var b Backlog
	for _, id := range ids {
		s.nextID = max(s.nextID, id+1)
		path := s.segPath(id)
		size, frames, torn, err := checkSegment(path)
		switch {
		case errors.Is(err, errCorrupt):
			to, qerr := quarantine(path)
			if qerr != nil {
				return Backlog{}, qerr
			}
			inc(s.Metrics.Corrupt)
			s.log.Error("spool segment is corrupt; quarantined, not replayed — the records in it are lost",
				"segment", filepath.Base(path), "moved_to", filepath.Base(to), "err", err)
			continue
		case err != nil:
			return Backlog{}, err
		}
		if torn {
			s.log.Warn("spool segment ended in a partly written record (a crash during a write); cut it off — it was never acknowledged",
				"segment", filepath.Base(path), "kept_bytes", size)
		}
		if frames == 0 {
			if err := os.Remove(path); err != nil {
				return Backlog{}, fmt.Errorf("removing empty spool segment: %w", err)
			}
			continue
		}
		b.Records += frames
		b.Last = Position{id, size}
		s.segs = append(s.segs, &segment{id: id, size: size, sealed: true})
		s.bytes += size
	}
	b.Segments, b.Bytes = len(s.segs), s.bytes
	s.updateGauges()
	return b, nil
}

func inc(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

func (s *Spool) updateGauges() {
	if g := s.Metrics.Bytes; g != nil {
		g.Set(float64(s.bytes))
	}
	if g := s.Metrics.Segments; g != nil {
		g.Set(float64(len(s.segs)))
	}
}

// Stats returns the bytes and the number of segments on disk.
func (s *Spool) Stats() (bytes int64, segments int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes, len(s.segs)
}

// Reserve claims room for a record of n bytes within MaxBytes, counting
// the records reserved and not yet written, and reports whether there
// was room. Every record given to Write must have been reserved; one that
// is not written after all is given back with Release.
func (s *Spool) Reserve(n int) bool {
	size := int64(n + frameHeaderLen)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes+s.reserved+size > s.maxBytes() {
		return false
	}
	s.reserved += size
	return true
}

// Release gives back the reservation of a record of n bytes that is not
// going to be written.
func (s *Spool) Release(n int) {
	s.mu.Lock()
	s.reserved -= int64(n + frameHeaderLen)
	s.mu.Unlock()
}

// Write appends recs to the segment being written with one write and one
// fsync, and returns ends with the position just past each record appended,
// in order. It uses up the records' reservations, written or not. On an
// error nothing of recs is durable: the segment is cut back to what was
// and closed, and the next Write begins a new one.
func (s *Spool) Write(recs [][]byte, ends []Position) ([]Position, error) {
	var reserved int64
	for _, r := range recs {
		reserved += int64(len(r) + frameHeaderLen)
	}
	release := func() {
		s.mu.Lock()
		s.reserved -= reserved
		s.mu.Unlock()
	}
	if err := s.ensureSegment(); err != nil {
		release()
		return ends, err
	}
	buf := s.buf[:0]
	for _, r := range recs {
		buf = appendFrame(buf, r)
	}
	s.buf = buf
	start := s.active.size
	_, err := s.f.Write(buf)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		// What was written may be partial: cut the file back to what is
		// known durable and continue in a fresh segment.
		s.f.Truncate(start)
		s.Close()
		release()
		return ends, fmt.Errorf("writing spool: %w", err)
	}
	inc(s.Metrics.Fsyncs)

	s.mu.Lock()
	s.reserved -= reserved
	s.active.size += int64(len(buf))
	s.bytes += int64(len(buf))
	s.updateGauges()
	s.mu.Unlock()
	off := start
	for _, r := range recs {
		off += int64(len(r) + frameHeaderLen)
		ends = append(ends, Position{s.active.id, off})
	}
	return ends, nil
}

// ensureSegment opens a new segment when there is none, or when the active
// one is large enough to close: at SegmentBytes, or earlier once everything
// in it has been acknowledged (so that an idle spool does not keep old
// records around).
func (s *Spool) ensureSegment() error {
	if s.active != nil {
		s.mu.Lock()
		size := s.active.size
		done := !s.acked.Less(Position{s.active.id, size})
		s.mu.Unlock()
		if size >= s.segmentBytes() || (done && size >= s.segmentBytes()/16) {
			s.Close()
		}
	}
	if s.active != nil {
		return nil
	}
	s.mu.Lock()
	id := s.nextID
	s.nextID++
	s.mu.Unlock()
	path := s.segPath(id)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("creating spool segment: %w", err)
	}
	if _, err = f.WriteString(segmentMagic); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(s.Dir)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("creating spool segment: %w", err)
	}
	s.f = f
	s.active = &segment{id: id, size: int64(len(segmentMagic))}
	s.mu.Lock()
	s.segs = append(s.segs, s.active)
	s.bytes += s.active.size
	s.updateGauges()
	s.mu.Unlock()
	return nil
}

// Close closes the segment being written, if any; a later Write begins a
// new one. What is not acknowledged stays on disk for the next Open, and
// Ack still deletes segments as their records are acknowledged.
func (s *Spool) Close() {
	if s.active == nil {
		return
	}
	if err := s.f.Close(); err != nil {
		s.log.Warn("closing spool segment", "err", err)
	}
	s.mu.Lock()
	s.active.sealed = true
	drop := s.dropAckedLocked()
	s.mu.Unlock()
	s.f, s.active = nil, nil
	s.removeSegments(drop)
}

// Ack records that every record up to pos is acknowledged, and deletes
// the closed segments that hold no other.
func (s *Spool) Ack(pos Position) {
	s.mu.Lock()
	if s.acked.Less(pos) {
		s.acked = pos
	}
	drop := s.dropAckedLocked()
	s.mu.Unlock()
	s.removeSegments(drop)
}

// dropAckedLocked forgets sealed segments whose records are all
// acknowledged and returns their paths for removal.
func (s *Spool) dropAckedLocked() []string {
	var drop []string
	keep := s.segs[:0]
	for _, seg := range s.segs {
		if seg.sealed && (seg.size <= int64(len(segmentMagic)) || !s.acked.Less(Position{seg.id, seg.size})) {
			drop = append(drop, s.segPath(seg.id))
			s.bytes -= seg.size
			continue
		}
		keep = append(keep, seg)
	}
	clear(s.segs[len(keep):])
	s.segs = keep
	s.updateGauges()
	return drop
}

func (s *Spool) removeSegments(paths []string) {
	for _, path := range paths {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("removing acknowledged spool segment", "err", err)
		}
	}
}

// Read returns the records after from and up to to (a position Write
// returned, or the Backlog's Last) of the first segment that holds any,
// the whole range checked before any of it is returned, and the position
// it read up to, where the next Read begins. It returns no records once it
// has reached to. A range that fails its check is left out, as Reject
// does, and Read goes on to the next.
func (s *Spool) Read(from, to Position) ([]Record, Position) {
	for from.Less(to) {
		s.mu.Lock()
		var seg *segment
		for _, sg := range s.segs {
			if sg.id >= from.Segment {
				seg = sg
				break
			}
		}
		if seg == nil || seg.id > to.Segment {
			s.mu.Unlock()
			return nil, to
		}
		if seg.id != from.Segment || from.Offset < int64(len(segmentMagic)) {
			from = Position{seg.id, int64(len(segmentMagic))}
		}
		end := seg.size
		if seg.id == to.Segment {
			end = min(end, to.Offset)
		}
		sealed := seg.sealed
		s.mu.Unlock()
		if from.Offset >= end {
			if seg.id == to.Segment {
				return nil, to
			}
			from = Position{seg.id + 1, 0}
			continue
		}
		recs, err := s.readFrames(seg.id, from.Offset, end)
		next := Position{seg.id, end}
		if err != nil {
			s.reject(seg.id, sealed, from.Offset, end, err)
			from = next
			continue
		}
		return recs, next
	}
	return nil, from
}

func (s *Spool) readFrames(id uint64, from, to int64) ([]Record, error) {
	data, err := readRange(s.segPath(id), from, to)
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
	recs := make([]Record, len(frames))
	for i, f := range frames {
		recs[i] = Record{Data: f.payload, End: Position{id, f.end}}
	}
	return recs, nil
}

// Reject leaves out recs, one Read's result that the caller cannot use
// (err says why), as Read leaves out a range that fails its check: a
// closed segment is quarantined — renamed, kept for inspection, never read
// again — and a range of the segment being written is skipped.
func (s *Spool) Reject(recs []Record, err error) {
	if len(recs) == 0 {
		return
	}
	first, last := recs[0], recs[len(recs)-1]
	id := first.End.Segment
	// A segment is quarantined only when the range ran to its end as it
	// was closed; one closed since the Read may hold records after recs.
	s.mu.Lock()
	sealed := false
	for _, seg := range s.segs {
		if seg.id == id {
			sealed = seg.sealed && seg.size == last.End.Offset
		}
	}
	s.mu.Unlock()
	s.reject(id, sealed, first.End.Offset-int64(len(first.Data)+frameHeaderLen), last.End.Offset, fmt.Errorf("%w: %v", errCorrupt, err))
}

func (s *Spool) reject(id uint64, sealed bool, from, to int64, err error) {
	inc(s.Metrics.Corrupt)
	path := s.segPath(id)
	if !sealed {
		s.log.Error("spool segment being written is corrupt; skipped the unreadable range",
			"segment", filepath.Base(path), "from", from, "to", to, "err", err)
		return
	}
	s.mu.Lock()
	for i, seg := range s.segs {
		if seg.id == id {
			s.bytes -= seg.size
			s.segs = append(s.segs[:i], s.segs[i+1:]...)
			break
		}
	}
	s.updateGauges()
	s.mu.Unlock()
	moved, qerr := quarantine(path)
	s.log.Error("spool segment is corrupt; quarantined, not replayed — the records in it are lost",
		"segment", filepath.Base(path), "moved_to", filepath.Base(moved), "err", err, "quarantine_err", qerr)
}
