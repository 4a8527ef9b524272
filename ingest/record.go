package ingest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/h3rum/h3rum/beacon"
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

// appendRecord appends the record form of run to b.
func appendRecord(b []byte, run *store.Run) ([]byte, error) {
	if len(run.Wire) == 0 {
		return b, errNoWire
	}
	enr, err := json.Marshal(&run.Enrichment)
	if err != nil {
		return b, fmt.Errorf("encoding spool record: %w", err)
	}
	b = binary.AppendUvarint(b, recordVersion)
	b = binary.AppendVarint(b, run.Received.UnixNano())
	b = binary.AppendUvarint(b, uint64(len(enr)))
	b = append(b, enr...)
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
	case recordVersion:
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
	rep, err := beacon.Decode(run.Wire)
	if err != nil {
		return store.Run{}, fmt.Errorf("decoding spooled report: %w", err)
	}
	run.Report = rep
	return run, nil
}
