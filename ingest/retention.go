package ingest

import (
	"context"
	"time"

	"github.com/h3rum/h3rum/ingest/store"
)

// every runs job after first, and again after each wait job returns, until
// the pipeline closes. Start runs the background jobs with it.
func (p *Pipeline) every(first time.Duration, job func() (next time.Duration)) {
	defer p.done.Done()
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-p.closing:
			return
		case <-t.C:
		}
		t.Reset(job())
	}
}

// retain drops the expired partitions (DropExpired); Start runs it a
// minute after it, then daily, or hourly after a failure.
func (p *Pipeline) retain() time.Duration {
	ctx, cancel := context.WithTimeout(p.abort, 5*time.Minute)
	defer cancel()
	var dropped []string
	var err error
	if p.Cluster != "" {
		dropped, err = store.DropExpiredOnCluster(ctx, p.Conn, p.Cluster, p.Retention, time.Now())
	} else {
		dropped, err = store.DropExpired(ctx, p.Conn, p.Retention, time.Now())
	}
	p.m.droppedParts.Add(float64(len(dropped)))
	if err != nil {
		p.log.Warn("retention: dropping old partitions failed; will retry", "err", err)
		return time.Hour
	}
	if len(dropped) > 0 {
		p.log.Info("retention: dropped old partitions", "partitions", dropped, "retention", p.Retention)
	}
	return 24 * time.Hour
}
