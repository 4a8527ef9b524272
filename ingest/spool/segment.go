package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The spool is a directory of numbered segment files, each an 8-byte magic
// followed by frames: a little-endian uint32 payload length, the CRC32C of
// the payload, and the payload (one record). Segments are only appended to,
// and deleted once every record in them is acknowledged.
const (
	segmentMagic   = "H3SPOOL1"
	segmentExt     = ".seg"
	corruptExt     = ".corrupt"
	frameHeaderLen = 8
	// maxFrameLen bounds a record; a longer length field is corruption.
	maxFrameLen = 4 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorrupt marks a segment that fails validation.
var errCorrupt = errors.New("corrupt spool segment")

// SegmentName is the file name of segment id in a spool directory.
func SegmentName(id uint64) string { return fmt.Sprintf("%016d%s", id, segmentExt) }

// appendFrame appends the frame for payload to b.
func appendFrame(b, payload []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// frame is one validated record in a segment: its payload and the offset
// just past it.
type frame struct {
	payload []byte
	end     int64
}

// scanFrames validates data, which starts at offset base of a segment, and
// returns its frames. A frame cut short by the end of data is reported
// through tail (the offset where complete frames end) rather than as an
// error: that is how a write interrupted by a crash looks, and such a frame
// was never acknowledged. A bad checksum or impossible length is errCorrupt.
func scanFrames(data []byte, base int64) (frames []frame, tail int64, err error) {
	off := 0
	for off < len(data) {
		if len(data)-off < frameHeaderLen {
			return frames, base + int64(off), nil
		}
		n := binary.LittleEndian.Uint32(data[off:])
		sum := binary.LittleEndian.Uint32(data[off+4:])
		if n == 0 || n > maxFrameLen {
			return nil, 0, fmt.Errorf("%w: frame at offset %d claims %d bytes", errCorrupt, base+int64(off), n)
		}
		if len(data)-off-frameHeaderLen < int(n) {
			return frames, base + int64(off), nil
		}
		p := data[off+frameHeaderLen : off+frameHeaderLen+int(n)]
		if crc32.Checksum(p, castagnoli) != sum {
			return nil, 0, fmt.Errorf("%w: checksum mismatch in frame at offset %d", errCorrupt, base+int64(off))
		}
		off += frameHeaderLen + int(n)
		frames = append(frames, frame{payload: p, end: base + int64(off)})
	}
	return frames, base + int64(off), nil
}

// ListSegments returns the ids of the segment files in dir, oldest first.
func ListSegments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing spool %q: %w", dir, err)
	}
	var ids []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), segmentExt)
		if !ok || e.IsDir() {
			continue
		}
		id, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// checkSegment validates a whole segment file left by an earlier run. It
// returns the size to keep: a frame torn by a crash at the end is cut off
// (truncating the file), and the caller replays the frames before it. A
// segment with a bad magic or checksum is errCorrupt, and must not be
// replayed at all.
func checkSegment(path string) (size int64, frames int, torn bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false, fmt.Errorf("reading spool segment %q: %w", path, err)
	}
	if len(data) < len(segmentMagic) {
		// Created but the magic never made it: nothing was acknowledged.
		return 0, 0, len(data) > 0, nil
	}
	if !bytes.Equal(data[:len(segmentMagic)], []byte(segmentMagic)) {
		return 0, 0, false, fmt.Errorf("%w: bad magic", errCorrupt)
	}
	fr, tail, err := scanFrames(data[len(segmentMagic):], int64(len(segmentMagic)))
	if err != nil {
		return 0, 0, false, err
	}
	if tail < int64(len(data)) {
		if err := os.Truncate(path, tail); err != nil {
			return 0, 0, false, fmt.Errorf("truncating torn spool segment %q: %w", path, err)
		}
		torn = true
	}
	return tail, len(fr), torn, nil
}

// quarantine renames a corrupt segment out of the replay set, keeping it for
// inspection.
func quarantine(path string) (string, error) {
	to := strings.TrimSuffix(path, segmentExt) + corruptExt
	if err := os.Rename(path, to); err != nil {
		return "", fmt.Errorf("quarantining spool segment %q: %w", path, err)
	}
	return to, nil
}

// syncDir makes file creations and removals in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readRange reads bytes [from, to) of a segment file.
func readRange(path string, from, to int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening spool segment: %w", err)
	}
	defer f.Close()
	b := make([]byte, to-from)
	if _, err := f.ReadAt(b, from); err != nil {
		return nil, fmt.Errorf("reading spool segment %s: %w", filepath.Base(path), err)
	}
	return b, nil
}
