package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/collector/origin"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/local"
)

// storeFlags choose the ClickHouse server: a DSN, or "local" — the server
// that `serve` manages under --data-dir.
type storeFlags struct {
	clickhouse string
	dataDir    string
	cluster    string
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.clickhouse, "clickhouse", local.DSN, `ClickHouse DSN (clickhouse://user:pass@host:9000/db), or "local": the server h3rum serve runs under --data-dir`)
	fs.StringVar(&s.dataDir, "data-dir", origin.DefaultDataDir, "directory for h3rum's state: certificates, spool, local ClickHouse")
	fs.StringVar(&s.cluster, "cluster", "", "cluster mode: the ClickHouse cluster (a remote_servers name) that --clickhouse's server belongs to; tables are replicated per shard behind Distributed tables (see deploy/README.md)")
}

// check validates the flags as a whole.
func (s *storeFlags) check() error {
	if s.cluster == "" {
		return nil
	}
	if s.clickhouse == local.DSN {
		return cli.Usagef("--cluster %s: needs --clickhouse with a DSN of one of the cluster's servers, not the managed local server", s.cluster)
	}
	if err := store.CheckClusterName(s.cluster); err != nil {
		return cli.Usagef("--cluster: %v", err)
	}
	return nil
}

// options are the flags as store.Options; start is serve's (see
// store.Options.Start).
func (s *storeFlags) options(log *slog.Logger, start bool) store.Options {
	return store.Options{ClickHouse: s.clickhouse, DataDir: s.dataDir, Cluster: s.cluster, Start: start, Logger: log}
}

// connect checks the flags and connects to the chosen server
// (store.Connect).
func (s *storeFlags) connect(ctx context.Context, log *slog.Logger, start bool) (*store.DB, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return store.Connect(ctx, s.options(log, start))
}

// open connects to the chosen server; the returned func releases it.
func (s *storeFlags) open(ctx context.Context, log *slog.Logger, start bool) (driver.Conn, func(), error) {
	db, err := s.connect(ctx, log, start)
	if err != nil {
		return nil, nil, err
	}
	return db.Conn, db.Close, nil
}
