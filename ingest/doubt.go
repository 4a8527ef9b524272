package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/ingest/store"
)

// An insert whose answer never came may have stopped anywhere inside
// ClickHouse, between samples and any of the tables its views fill. The
// batcher writes the runs of each insert to a file beside the spool
// segments before it sends them, and empties it once ClickHouse has
// answered; a block still recorded there (after an error, or found at
// start) is completed with store.Complete before anything else is
// inserted, so every derived table ends up holding every stored run once.

// doubtFileName is the in-doubt record's file in the spool directory.
const doubtFileName = "in-doubt.json"

// doubtRecord is the file's content: the block and a checksum of it. A
// record that does not check out was torn while it was written, before its
// insert was sent, and is ignored.
type doubtRecord struct {
	Block store.Block `json:"block"`
	CRC   uint32      `json:"crc"`
}

// doubt keeps the in-doubt record's file open, and the block recorded.
type doubt struct {
	f     *os.File
	block store.Block // nil: nothing in doubt
	buf   bytes.Buffer

	completedRuns *prometheus.CounterVec
	unresolved    *prometheus.CounterVec
}

// openDoubt opens (creating, durably) the in-doubt record in dir and reads
// the block an earlier process left in doubt.
func openDoubt(dir string, reg prometheus.Registerer) (*doubt, error) {
	d := &doubt{
		completedRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h3rum_ingest_derived_completed_total",
			Help: "Repairs of a table filled from samples after an insert whose outcome was in doubt: runs added to a per-run table, hours to an hourly one."}, []string{"table"}),
		unresolved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h3rum_ingest_derived_unresolved_total",
			Help: "Hours of a table filled from samples that an in-doubt insert left not matching samples in a way it could not repair (see h3rum check)."}, []string{"table"}),
	}
	for _, t := range store.DerivedTables() {
		d.completedRuns.WithLabelValues(t)
		d.unresolved.WithLabelValues(t)
	}
	if reg != nil {
		if err := errors.Join(reg.Register(d.completedRuns), reg.Register(d.unresolved)); err != nil {
			return nil, fmt.Errorf("registering ingest metrics: %w", err)
		}
	}
	path := filepath.Join(dir, doubtFileName)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading the in-doubt record: %w", err)
	}
	var rec doubtRecord
	if len(b) > 0 && json.Unmarshal(b, &rec) == nil && rec.CRC == blockCRC(rec.Block) {
		d.block = rec.Block
	}
	created := errors.Is(err, fs.ErrNotExist)
	if d.f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("opening the in-doubt record: %w", err)
	}
	if created {
		if err := syncDir(dir); err != nil {
			d.f.Close()
			return nil, err
		}
	}
	return d, nil
}

func blockCRC(b store.Block) uint32 {
	j, _ := json.Marshal(b)
	return crc32.ChecksumIEEE(j)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// record makes b the block in doubt, durably, before its insert is sent.
func (d *doubt) record(b store.Block) error {
	d.buf.Reset()
	if err := json.NewEncoder(&d.buf).Encode(doubtRecord{Block: b, CRC: blockCRC(b)}); err != nil {
		return fmt.Errorf("writing the in-doubt record: %w", err)
	}
	if err := d.f.Truncate(0); err != nil {
		return fmt.Errorf("writing the in-doubt record: %w", err)
	}
	if _, err := d.f.WriteAt(d.buf.Bytes(), 0); err != nil {
		return fmt.Errorf("writing the in-doubt record: %w", err)
	}
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("writing the in-doubt record: %w", err)
	}
	d.block = b
	return nil
}

// clear forgets the block once ClickHouse has answered for it (or it was
// completed). Not synced: a block that comes back after a crash is
// completed again, which changes nothing.
func (d *doubt) clear() error {
	d.block = nil
	if err := d.f.Truncate(0); err != nil {
		return fmt.Errorf("clearing the in-doubt record: %w", err)
	}
	return nil
}

// complete completes the block in doubt, if any, and clears it.
func (d *doubt) complete(ctx context.Context, p *Pipeline) error {
	if len(d.block) == 0 {
		return nil
	}
	done, err := store.Complete(ctx, p.Conn, p.storeCluster(), d.block)
	unresolved := false
	for _, c := range done {
		unresolved = unresolved || c.Unresolved > 0
		d.completedRuns.WithLabelValues(c.Table).Add(float64(c.Completed))
		d.unresolved.WithLabelValues(c.Table).Add(float64(c.Unresolved))
		if c.Completed > 0 {
			p.log.Info("completed a table filled from samples after an insert in doubt", "table", c.Table, "added", c.Completed)
		}
		if c.Unresolved > 0 {
			p.log.Warn("a table filled from samples does not match samples in hours an insert in doubt touched; they are rebuilt from samples once they are old enough (see mend.go)",
				"table", c.Table, "hours", c.Unresolved)
		}
	}
	if err != nil {
		return err
	}
	if unresolved {
		if err := p.mender.add(d.block); err != nil {
			return err
		}
	}
	return d.clear()
}

func (d *doubt) close() error { return d.f.Close() }

// storeCluster is the cluster Conn's server belongs to, as store needs it;
// the zero Cluster on one server.
func (p *Pipeline) storeCluster() store.Cluster {
	return store.Cluster{Name: p.Cluster, Dial: p.ClusterDial}
}
