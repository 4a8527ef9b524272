package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/ingest/store"
)

// Complete cannot settle every in-doubt insert: an hourly table's measure
// that matches neither the table with the block nor without it (another
// collector's insert in flight, or a hole that is not this block's) is
// left alone. Such hours are recorded here, durably, and once each is
// old enough for store.Repair (store.RepairMinAge past its end, when
// nothing but a replayed spool still writes into it) the collector
// rebuilds it from samples and checks it again, until every derived table
// matches samples there. So no difference an in-doubt insert left stays
// for good, whatever its cause.

// mendFileName is the record of hours to mend, in the spool directory.
const mendFileName = "to-mend.json"

// mendInterval is how often the mender looks for hours that are due,
// jittered so that collectors sharing a database do not mend together.
const mendInterval = time.Minute

// mendRecord is the file's content: the hours (unix seconds) and a
// checksum of them. A record that does not check out is read as empty and
// logged: the hours it held are still found by h3rum check.
type mendRecord struct {
	Hours []int64 `json:"hours"`
	CRC   uint32  `json:"crc"`
}

func hoursCRC(h []int64) uint32 {
	j, _ := json.Marshal(h)
	return crc32.ChecksumIEEE(j)
}

// mender keeps the hours to mend and mends them when due.
type mender struct {
	dir   string
	mu    sync.Mutex
	hours []int64 // sorted

	repaired *prometheus.CounterVec
	pending  prometheus.GaugeFunc
}

// openMender reads the hours an earlier process left to mend in dir.
func openMender(dir string, reg prometheus.Registerer) (*mender, error) {
	m := &mender{dir: dir}
	m.repaired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "h3rum_ingest_derived_mended_total",
		Help: "Repairs, from samples, of an hour that an in-doubt insert left unresolved: runs added to a per-run table, hours rebuilt of an hourly one."}, []string{"table"})
	m.pending = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "h3rum_ingest_derived_hours_to_mend",
		Help: "Hours an in-doubt insert left unresolved that are not yet mended (each is mended once it ended " + store.RepairMinAge.String() + " ago)."},
		func() float64 { m.mu.Lock(); defer m.mu.Unlock(); return float64(len(m.hours)) })
	for _, t := range store.DerivedTables() {
		m.repaired.WithLabelValues(t)
	}
	if reg != nil {
		if err := errors.Join(reg.Register(m.repaired), reg.Register(m.pending)); err != nil {
			return nil, fmt.Errorf("registering ingest metrics: %w", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, mendFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the hours to mend: %w", err)
	}
	var rec mendRecord
	if json.Unmarshal(b, &rec) != nil || rec.CRC != hoursCRC(rec.Hours) {
		return m, fmt.Errorf("%w: %s does not check out; h3rum check finds the hours it held", errTornMend, mendFileName)
	}
	m.hours = rec.Hours
	slices.Sort(m.hours)
	return m, nil
}

// errTornMend is openMender's answer to a record that does not check out:
// the caller logs it and goes on with none.
var errTornMend = errors.New("the record of hours to mend is torn")

// add records the hours of block, durably, before its in-doubt record is
// cleared.
func (m *mender) add(block store.Block) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	hours := slices.Clone(m.hours)
	for _, r := range block {
		h := r.Received.UTC().Truncate(time.Hour).Unix()
		if i, found := slices.BinarySearch(hours, h); !found {
			hours = slices.Insert(hours, i, h)
		}
	}
	return m.set(hours)
}

// set makes hours the record, durably, unless they are the hours it holds
// (set only adds or only removes).
func (m *mender) set(hours []int64) error {
	if len(hours) == len(m.hours) {
		return nil
	}
	if err := m.write(hours); err != nil {
		return err
	}
	m.hours = hours
	return nil
}

// write replaces the record with hours: a new file synced and renamed over
// the old, so that a crash leaves one or the other.
func (m *mender) write(hours []int64) error {
	b, err := json.Marshal(mendRecord{Hours: hours, CRC: hoursCRC(hours)})
	if err != nil {
		return fmt.Errorf("writing the hours to mend: %w", err)
	}
	path := filepath.Join(m.dir, mendFileName)
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing the hours to mend: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("writing the hours to mend: %w", err)
	}
	return syncDir(m.dir)
}

// due returns the hours that ended store.RepairMinAge or more before now.
func (m *mender) due(now time.Time) []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []time.Time
	for _, h := range m.hours {
		at := time.Unix(h, 0).UTC()
		if !at.Add(time.Hour + store.RepairMinAge).After(now) {
			out = append(out, at)
		}
	}
	return out
}

// done forgets the mended hours.
func (m *mender) done(mended []time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	hours := slices.DeleteFunc(slices.Clone(m.hours), func(h int64) bool {
		return slices.ContainsFunc(mended, func(t time.Time) bool { return t.Unix() == h })
	})
	return m.set(hours)
}

// mend mends the hours that are due; Start runs it every mendInterval
// (jittered).
func (p *Pipeline) mend() time.Duration {
	ctx, cancel := context.WithTimeout(p.abort, 10*time.Minute)
	defer cancel()
	if err := p.mendDue(ctx, time.Now()); err != nil {
		p.log.Warn("mending a table filled from samples failed; will retry", "err", err)
	}
	return mendWait()
}

func mendWait() time.Duration {
	return mendInterval*4/5 + rand.N(mendInterval*2/5)
}

// mendDue checks each hour that is due at now and rebuilds from samples
// what differs there (store.Repair), then checks again: an hour is
// forgotten once every derived table matches samples in it. A rebuild
// that raced an insert (a replayed spool, another collector mending the
// same hour) shows in the second check and is mended again next time.
func (p *Pipeline) mendDue(ctx context.Context, now time.Time) error {
	due := p.mender.due(now)
	if len(due) == 0 {
		return nil
	}
	cluster := p.storeCluster()
	if cluster.Name != "" && cluster.Dial == nil {
		return fmt.Errorf("%d hours to mend: %w", len(due), store.ErrRepairOnCluster)
	}
	var mended []time.Time
	var errs []error
	for _, h := range due {
		diffs, err := store.Check(ctx, p.Conn, h, h.Add(time.Hour))
		if err == nil && len(diffs) > 0 {
			var repaired []store.Repaired
			repaired, err = store.Repair(ctx, p.Conn, cluster, diffs, now)
			for _, r := range repaired {
				n := float64(r.Added)
				if r.Rebuilt {
					n = 1
				}
				p.mender.repaired.WithLabelValues(r.Table).Add(n)
			}
			if err == nil {
				p.log.Info("mended tables filled from samples in an hour an insert in doubt left unresolved", "hour", h, "differences", len(diffs))
				diffs, err = store.Check(ctx, p.Conn, h, h.Add(time.Hour))
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("hour %s: %w", h.Format(time.DateTime), err))
			continue
		}
		if len(diffs) == 0 {
			mended = append(mended, h)
		}
	}
	if err := p.mender.done(mended); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
