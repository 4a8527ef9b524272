package ingest

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// pipelineMetrics are the Pipeline's Prometheus metrics.
type pipelineMetrics struct {
	acceptedRuns    prometheus.Counter
	acceptedSamples prometheus.Counter
	busy            prometheus.Counter
	spills          prometheus.Counter
	fsyncs          prometheus.Counter
	corrupt         prometheus.Counter
	spoolBytes      prometheus.Gauge
	spoolSegments   prometheus.Gauge
	insertBatches   prometheus.Counter
	insertRows      prometheus.Counter
	insertErrors    prometheus.Counter
	insertSeconds   prometheus.Histogram
	liveDropped     prometheus.Counter
	droppedParts    prometheus.Counter
	replaySkipped   prometheus.Counter
	// Network Error Logging reports (POST /reports).
	acceptedNEL      prometheus.Counter
	insertRowsNEL    prometheus.Counter
	replaySkippedNEL prometheus.Counter
}

func newPipelineMetrics(reg prometheus.Registerer, queueDepth func() float64) (*pipelineMetrics, error) {
	m := &pipelineMetrics{
		acceptedRuns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_accepted_runs_total", Help: "Reports made durable (in the spool) and acknowledged."}),
		acceptedSamples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_accepted_samples_total", Help: "Samples in acknowledged reports."}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_busy_total", Help: "Reports refused because the spool budget (--spool-max-bytes) was used up."}),
		spills: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_queue_spills_total", Help: "Times the in-memory queue filled and the batcher switched to reading the spool."}),
		fsyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_spool_fsyncs_total", Help: "Spool group commits (one fsync each)."}),
		corrupt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_spool_corrupt_segments_total", Help: "Spool segments quarantined as corrupt."}),
		spoolBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "h3rum_ingest_spool_bytes", Help: "Bytes in spool segments not yet fully inserted."}),
		spoolSegments: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "h3rum_ingest_spool_segments", Help: "Spool segment files on disk."}),
		insertBatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_insert_batches_total", Help: "Successful batch inserts into ClickHouse."}),
		insertRows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_insert_rows_total", Help: "Sample rows inserted into ClickHouse (replays included)."}),
		insertErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_insert_errors_total", Help: "Failed insert attempts (retried from the spool)."}),
		insertSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "h3rum_ingest_insert_seconds", Help: "Latency of successful batch inserts.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
		liveDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_live_dropped_total", Help: "Accepted runs not passed to the live feed because it was behind."}),
		droppedParts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_retention_dropped_partitions_total", Help: "Month partitions dropped by retention."}),
		replaySkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_replay_skipped_runs_total",
			Help: "Runs left out of a replayed or retried insert because ClickHouse already held them."}),
		acceptedNEL: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_nel_accepted_reports_total", Help: "Network Error Logging reports made durable (in the spool) and acknowledged."}),
		insertRowsNEL: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_nel_insert_rows_total", Help: "NEL report rows inserted into ClickHouse (replays included)."}),
		replaySkippedNEL: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_nel_replay_skipped_batches_total",
			Help: "NEL uploads left out of a replayed or retried insert because ClickHouse already held them."}),
	}
	if reg == nil {
		return m, nil
	}
	cs := []prometheus.Collector{
		m.acceptedRuns, m.acceptedSamples, m.busy, m.spills, m.fsyncs, m.corrupt, m.spoolBytes, m.spoolSegments,
		m.insertBatches, m.insertRows, m.insertErrors, m.insertSeconds, m.liveDropped, m.droppedParts, m.replaySkipped,
		m.acceptedNEL, m.insertRowsNEL, m.replaySkippedNEL,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "h3rum_ingest_queue_runs", Help: "Reports in the in-memory queue waiting for an insert."}, queueDepth),
	}
	var errs []error
	for _, c := range cs {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}

// handlerMetrics are the Handler's Prometheus metrics.
type handlerMetrics struct {
	rejected *prometheus.CounterVec
	// rejectedFields counts decode refusals by the wire field at fault
	// (beacon.DecodeFields, or fieldNone): a fixed set of labels.
	rejectedFields *prometheus.CounterVec
	requests       *prometheus.CounterVec
	// POST /reports (Network Error Logging uploads).
	nelUploads  prometheus.Counter
	nelRejected *prometheus.CounterVec
	nelIgnored  *prometheus.CounterVec
}

func newHandlerMetrics(reg prometheus.Registerer) (*handlerMetrics, error) {
	m := &handlerMetrics{
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h3rum_ingest_rejected_total", Help: "Reports rejected, by reason."}, []string{"reason"}),
		rejectedFields: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h3rum_ingest_rejected_fields_total",
			Help: "Reports the decoder refused (reason decode_*), by the wire field at fault: s.d for any sample's duration, none when no one field was (syntax, size, version, an unknown key)."},
			[]string{"field"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h3rum_ingest_reports_total", Help: "Reports received, by transport (post, ws)."}, []string{"transport"}),
		nelUploads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "h3rum_ingest_nel_uploads_total", Help: "POST /reports uploads received (Reporting API batches)."}),
		nelRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h3rum_ingest_nel_rejected_total", Help: "POST /reports uploads refused, by reason."}, []string{"reason"}),
		nelIgnored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h3rum_ingest_nel_ignored_reports_total",
			Help: "Reports in accepted uploads that were not stored, by reason: unknown_type (not network-error), other_origin (about an origin this collector does not serve), page_not_allowed (from a page the Origin allowlist does not name)."},
			[]string{"reason"}),
	}
	if reg == nil {
		return m, nil
	}
	return m, errors.Join(reg.Register(m.rejected), reg.Register(m.rejectedFields), reg.Register(m.requests), reg.Register(m.nelUploads),
		reg.Register(m.nelRejected), reg.Register(m.nelIgnored))
}
