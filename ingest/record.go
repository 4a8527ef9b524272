package ingest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/nel"
	"github.com/h3rum/h3rum/ingest/store"
)

// A spool record is a run as the collector accepted it: a uvarint version
// (recordVersion), the receive time as a varint of Unix nanoseconds, the
// enrichment as length-prefixed JSON, and the report's wire bytes, which a
// replay decodes again with beacon.Decode. The spool thus has no codec of
// its own for reports: a new report field needs nothing here. The client
// address is never written; it was used for the enrichment and dropped.
const recordVersion = 2

var errNoWire = errors.New("run has no wire bytes to spool")

// An agent's run (store.SourceAgent) is a record of its own kind,
// recordAgentRun: as recordVersion's, with the handshake samples' JSON as
// received, length-prefixed, before the report's wire bytes. Browser runs
// keep recordVersion, so that an older collector still reads them.
const recordAgentRun = 4

// appendRecord appends the record form of run to b.
func appendRecord(b []byte, run *store.Run) ([]byte, error) {
	if len(run.Wire) == 0 {
		return b, errNoWire
	}
	enr, err := json.Marshal(&run.Enrichment)
	if err != nil {
		return b, fmt.Errorf("encoding spool record: %w", err)
	}
	agent := run.Source == store.SourceAgent
	if agent {
		b = binary.AppendUvarint(b, recordAgentRun)
	} else {
		b = binary.AppendUvarint(b, recordVersion)
	}
	b = binary.AppendVarint(b, run.Received.UnixNano())
	b = binary.AppendUvarint(b, uint64(len(enr)))
	b = append(b, enr...)
	if agent {
		b = binary.AppendUvarint(b, uint64(len(run.HandshakeWire)))
		b = append(b, run.HandshakeWire...)
	}
	return append(b, run.Wire...), nil
}

// decodeRecord parses a record of any version the spool ever wrote. The
// returned run's Wire aliases b.
func decodeRecord(b []byte) (store.Run, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return store.Run{}, fmt.Errorf("decoding spool record: %w", errShortRecord)
	}
	switch v {
	case 1:
		return decodeRecordV1(b[n:])
	case recordVersion, recordAgentRun:
	default:
		return store.Run{}, fmt.Errorf("decoding spool record: unknown version %d", v)
	}
	b = b[n:]
	ns, n := binary.Varint(b)
	if n <= 0 {
		return store.Run{}, fmt.Errorf("decoding spool record: %w", errShortRecord)
	}
	b = b[n:]
	size, n := binary.Uvarint(b)
	if n <= 0 || size > uint64(len(b)-n) {
		return store.Run{}, fmt.Errorf("decoding spool record: %w", errShortRecord)
	}
	b = b[n:]
	run := store.Run{Received: time.Unix(0, ns).UTC(), Wire: b[size:]}
	if err := json.Unmarshal(b[:size], &run.Enrichment); err != nil {
		return store.Run{}, fmt.Errorf("decoding spool record enrichment: %w", err)
	}
	if v == recordAgentRun {
		rest := b[size:]
		hsize, n := binary.Uvarint(rest)
		if n <= 0 || hsize > uint64(len(rest)-n) {
			return store.Run{}, fmt.Errorf("decoding spool record: %w", errShortRecord)
		}
		run.HandshakeWire, run.Wire = rest[n:n+int(hsize)], rest[n+int(hsize):]
		if hsize > 0 {
			hs, err := beacon.DecodeHandshakes(run.HandshakeWire)
			if err != nil {
				return store.Run{}, fmt.Errorf("decoding spooled handshakes: %w", err)
			}
			run.Handshakes = hs
		} else {
			run.HandshakeWire = nil
		}
	}
	rep, err := beacon.Decode(run.Wire)
	if err != nil {
		return store.Run{}, fmt.Errorf("decoding spooled report: %w", err)
	}
	run.Report = rep
	return run, nil
}

// A NEL record (recordNEL) is one accepted upload of Network Error Logging
// reports: the uvarint kind, the receive time as a varint of Unix
// nanoseconds, the batch id (16 bytes), the enrichment as length-prefixed
// JSON, and the kept reports in nel.Encode's form — origins only, never
// the URLs, referrers or user agents the browser sent. It shares the
// spool, its group commit and its replay with runs; the first uvarint
// tells the kinds apart, and every version of run record stays readable.
const recordNEL = 3

// appendNELRecord appends the record form of b to buf.
func appendNELRecord(buf []byte, b *store.NELBatch) ([]byte, error) {
	if len(b.Reports) == 0 {
		return buf, errNoReports
	}
	enr, err := json.Marshal(&b.Enrichment)
	if err != nil {
		return buf, fmt.Errorf("encoding spool record: %w", err)
	}
	reports, err := nel.Encode(b.Reports)
	if err != nil {
		return buf, fmt.Errorf("encoding spool record: %w", err)
	}
	buf = binary.AppendUvarint(buf, recordNEL)
	buf = binary.AppendVarint(buf, b.Received.UnixNano())
	buf = append(buf, b.ID[:]...)
	buf = binary.AppendUvarint(buf, uint64(len(enr)))
	buf = append(buf, enr...)
	return append(buf, reports...), nil
}

var errNoReports = errors.New("NEL batch has no reports to spool")

// isNELRecord reports whether a spool record holds a NEL batch.
func isNELRecord(b []byte) bool {
	v, n := binary.Uvarint(b)
	return n > 0 && v == recordNEL
}

// decodeNELRecord parses a NEL record.
func decodeNELRecord(b []byte) (*store.NELBatch, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v != recordNEL {
		return nil, fmt.Errorf("decoding NEL spool record: %w", errShortRecord)
	}
	b = b[n:]
	ns, n := binary.Varint(b)
	if n <= 0 || len(b)-n < 16 {
		return nil, fmt.Errorf("decoding NEL spool record: %w", errShortRecord)
	}
	b = b[n:]
	batch := &store.NELBatch{Received: time.Unix(0, ns).UTC()}
	copy(batch.ID[:], b[:16])
	b = b[16:]
	size, n := binary.Uvarint(b)
	if n <= 0 || size > uint64(len(b)-n) {
		return nil, fmt.Errorf("decoding NEL spool record: %w", errShortRecord)
	}
	b = b[n:]
	if err := json.Unmarshal(b[:size], &batch.Enrichment); err != nil {
		return nil, fmt.Errorf("decoding NEL spool record enrichment: %w", err)
	}
	reports, err := nel.DecodeSpooled(b[size:])
	if err != nil {
		return nil, err
	}
	if len(reports) == 0 {
		return nil, fmt.Errorf("decoding NEL spool record: %w", errNoReports)
	}
	batch.Reports = reports
	return batch, nil
}
