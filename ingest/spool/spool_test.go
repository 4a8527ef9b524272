package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func open(t *testing.T, s *Spool) Backlog {
	t.Helper()
	b, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// write reserves and writes recs as one group.
func write(t *testing.T, s *Spool, recs ...[]byte) []Position {
	t.Helper()
	for _, r := range recs {
		if !s.Reserve(len(r)) {
			t.Fatalf("no room for a record of %d bytes", len(r))
		}
	}
	ends, err := s.Write(recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ends
}

// readAll reads every record after from up to to.
func readAll(s *Spool, from, to Position) []Record {
	var all []Record
	for from.Less(to) {
		recs, next := s.Read(from, to)
		all = append(all, recs...)
		from = next
	}
	return all
}

// TestFormat pins the bytes on disk: spools written by earlier releases
// must replay, so the format never changes.
func TestFormat(t *testing.T) {
	dir := t.TempDir()
	s := &Spool{Dir: dir}
	open(t, s)
	ends := write(t, s, []byte("first"), []byte("second record"))
	s.Close()

	var want bytes.Buffer
	want.WriteString("H3SPOOL1")
	for _, p := range []string{"first", "second record"} {
		binary.Write(&want, binary.LittleEndian, uint32(len(p)))
		binary.Write(&want, binary.LittleEndian, crc32.Checksum([]byte(p), crc32.MakeTable(crc32.Castagnoli)))
		want.WriteString(p)
	}
	got, err := os.ReadFile(filepath.Join(dir, "0000000000000001.seg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("segment bytes\n got %q\nwant %q", got, want.Bytes())
	}
	if wantEnds := []Position{{1, 8 + 8 + 5}, {1, 8 + 8 + 5 + 8 + 13}}; fmt.Sprint(ends) != fmt.Sprint(wantEnds) {
		t.Errorf("positions %v, want %v", ends, wantEnds)
	}

	// A new process reads both back.
	s = &Spool{Dir: dir}
	left := open(t, s)
	if left.Segments != 1 || left.Records != 2 || left.Bytes != int64(len(want.Bytes())) || left.Last != ends[1] {
		t.Errorf("backlog %+v, want 1 segment, 2 records, %d bytes up to %v", left, len(want.Bytes()), ends[1])
	}
	recs := readAll(s, Position{}, left.Last)
	if len(recs) != 2 || string(recs[0].Data) != "first" || string(recs[1].Data) != "second record" || recs[1].End != ends[1] {
		t.Errorf("read back %+v", recs)
	}
}

func TestReadFromPosition(t *testing.T) {
	s := &Spool{Dir: t.TempDir(), SegmentBytes: 64}
	open(t, s)
	var ends []Position
	for i := range 10 {
		ends = append(ends, write(t, s, fmt.Appendf(nil, "record %02d with some bytes", i))...)
	}
	if _, n := s.Stats(); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	for _, c := range []struct {
		from, to int // indexes into ends; -1 is the zero Position
		want     []int
	}{
		{-1, 9, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{3, 9, []int{4, 5, 6, 7, 8, 9}},
		{-1, 4, []int{0, 1, 2, 3, 4}},
		{5, 5, nil},
	} {
		at := func(i int) Position {
			if i < 0 {
				return Position{}
			}
			return ends[i]
		}
		var got []int
		for _, r := range readAll(s, at(c.from), at(c.to)) {
			var i int
			fmt.Sscanf(string(r.Data), "record %d", &i)
			if r.End != ends[i] {
				t.Errorf("record %d ends at %v, written at %v", i, r.End, ends[i])
			}
			got = append(got, i)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Read(%d, %d) = records %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

func TestAckRemovesSegments(t *testing.T) {
	dir := t.TempDir()
	s := &Spool{Dir: dir, SegmentBytes: 64}
	open(t, s)
	var ends []Position
	for range 10 {
		ends = append(ends, write(t, s, []byte("a record of thirty-two bytes...."))...)
	}
	s.Ack(ends[4])
	segs, _ := ListSegments(dir)
	if len(segs) == 0 || segs[0] != ends[5].Segment {
		t.Errorf("after acknowledging up to %v, segments %v remain; want the first from segment %d", ends[4], segs, ends[5].Segment)
	}
	s.Ack(ends[9])
	s.Close()
	if segs, _ := ListSegments(dir); len(segs) != 0 {
		t.Errorf("segments %v left after everything was acknowledged", segs)
	}
	if b, n := s.Stats(); b != 0 || n != 0 {
		t.Errorf("stats %d bytes, %d segments; want none", b, n)
	}
}

func TestBudget(t *testing.T) {
	s := &Spool{Dir: t.TempDir(), MaxBytes: 1 << 10}
	open(t, s)
	rec := make([]byte, 100)
	n := 0
	for s.Reserve(len(rec)) {
		n++
	}
	if n != (1<<10)/(100+frameHeaderLen) {
		t.Errorf("reserved %d records of 108 bytes in 1 KiB", n)
	}
	s.Release(len(rec))
	if !s.Reserve(len(rec)) {
		t.Error("a released reservation was not given back")
	}
	// Written records count against the budget as their reservations did.
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = rec
	}
	if _, err := s.Write(recs, nil); err != nil {
		t.Fatal(err)
	}
	if s.Reserve(len(rec)) {
		t.Error("reserved beyond the budget once the records were written")
	}
}

// TestCorruptSegmentQuarantined: a segment with a flipped byte is set
// aside, named in the log, and the rest replays; a record torn by a crash
// is cut off.
func TestCorruptSegmentQuarantined(t *testing.T) {
	dir := t.TempDir()
	s := &Spool{Dir: dir, SegmentBytes: 8 << 10}
	open(t, s)
	rec := bytes.Repeat([]byte("r"), 900)
	for range 30 {
		write(t, s, rec)
	}
	s.Close()
	segs, err := ListSegments(dir)
	if err != nil || len(segs) < 3 {
		t.Fatalf("want at least 3 segments, have %v (%v)", segs, err)
	}
	// Flip a byte in the middle of the second segment; tear the last one.
	bad := filepath.Join(dir, SegmentName(segs[1]))
	data, _ := os.ReadFile(bad)
	data[len(data)/2] ^= 0xff
	os.WriteFile(bad, data, 0o640)
	badFrames := (len(data) - len(segmentMagic)) / (len(rec) + frameHeaderLen)
	last := filepath.Join(dir, SegmentName(segs[len(segs)-1]))
	f, _ := os.OpenFile(last, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(appendFrame(nil, []byte("a record cut short by a crash"))[:20])
	f.Close()

	var logs lockedBuilder
	s = &Spool{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	left := open(t, s)
	if _, err := os.Stat(strings.TrimSuffix(bad, segmentExt) + corruptExt); err != nil {
		t.Errorf("corrupt segment not quarantined: %v", err)
	}
	if !strings.Contains(logs.String(), "quarantined") || !strings.Contains(logs.String(), filepath.Base(bad)) {
		t.Errorf("no clear log line naming the quarantined segment:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "partly written record") {
		t.Errorf("torn tail not reported:\n%s", logs.String())
	}
	recs := readAll(s, Position{}, left.Last)
	if want := 30 - badFrames; left.Records != want || len(recs) != want {
		t.Errorf("backlog of %d records, read %d; want %d (all but the quarantined segment's)", left.Records, len(recs), want)
	}
	// New segments are numbered after the quarantined one too.
	if ends := write(t, s, rec); ends[0].Segment <= segs[len(segs)-1] {
		t.Errorf("new record in segment %d, want one after %d", ends[0].Segment, segs[len(segs)-1])
	}
}

// TestReject: records the caller cannot use are left out — a closed
// segment quarantined, the one being written skipped up to where Read got.
func TestReject(t *testing.T) {
	dir := t.TempDir()
	var logs lockedBuilder
	s := &Spool{Dir: dir, SegmentBytes: 64, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	open(t, s)
	var ends []Position
	for range 4 {
		ends = append(ends, write(t, s, []byte("a record of thirty-two bytes...."))...)
	}
	closed, _ := s.Read(Position{}, ends[3])
	s.Reject(closed, errors.New("cannot decode"))
	if _, err := os.Stat(filepath.Join(dir, strings.TrimSuffix(SegmentName(closed[0].End.Segment), segmentExt)+corruptExt)); err != nil {
		t.Errorf("rejected closed segment not quarantined: %v", err)
	}
	active, next := s.Read(ends[2], ends[3])
	if len(active) != 1 || next != ends[3] {
		t.Fatalf("read %d records up to %v from the segment being written", len(active), next)
	}
	s.Reject(active, errors.New("cannot decode"))
	if !strings.Contains(logs.String(), "skipped the unreadable range") {
		t.Errorf("skipped range not logged:\n%s", logs.String())
	}
	if segs, _ := ListSegments(dir); len(segs) == 0 || segs[len(segs)-1] != ends[3].Segment {
		t.Errorf("segments %v: the one being written must stay", segs)
	}
}

type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
