package ingest

import (
	"context"
	"time"

	"github.com/h3rum/h3rum/ingest/store"
)

// retentionLoop runs DropExpired shortly after Start and then daily.
func (p *Pipeline) retentionLoop() {
	defer p.done.Done()
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-p.closing:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(p.abort, 5*time.Minute)
		var dropped []string
		var err error
		if p.Cluster != "" {
			dropped, err = store.DropExpiredOnCluster(ctx, p.Conn, p.Cluster, p.Retention, time.Now())
		} else {
			dropped, err = store.DropExpired(ctx, p.Conn, p.Retention, time.Now())
		}
		p.m.droppedParts.Add(float64(len(dropped)))
		cancel()
		if err != nil {
			p.log.Warn("retention: dropping old partitions failed; will retry", "err", err)
			t.Reset(time.Hour)
			continue
		}
		if len(dropped) > 0 {
			p.log.Info("retention: dropped old partitions", "partitions", dropped, "retention", p.Retention)
		}
		t.Reset(24 * time.Hour)
	}
}
