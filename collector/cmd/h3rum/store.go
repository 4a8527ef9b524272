package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store"
)

// storeFlags choose the ClickHouse server: a DSN, or "local" — the server
// that `serve` manages under --data-dir.
type storeFlags struct {
	clickhouse string
	dataDir    string
	cluster    string

	local *store.Local // set by open when it starts the managed server
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.clickhouse, "clickhouse", "local", `ClickHouse DSN (clickhouse://user:pass@host:9000/db), or "local": the server h3rum serve runs under --data-dir`)
	fs.StringVar(&s.dataDir, "data-dir", "./var", "directory for h3rum's state: certificates, spool, local ClickHouse")
	fs.StringVar(&s.cluster, "cluster", "", "cluster mode: the ClickHouse cluster (a remote_servers name) that --clickhouse's server belongs to; tables are replicated per shard behind Distributed tables (see deploy/README.md)")
}

// check validates the flags as a whole.
func (s *storeFlags) check() error {
	if s.cluster == "" {
		return nil
	}
	if s.clickhouse == "local" {
		return usagef("--cluster %s: needs --clickhouse with a DSN of one of the cluster's servers, not the managed local server", s.cluster)
	}
	if err := store.CheckClusterName(s.cluster); err != nil {
		return usagef("--cluster: %v", err)
	}
	return nil
}

// dsn is --clickhouse with cluster mode's insert settings when --cluster
// is set.
func (s *storeFlags) dsn() (string, error) {
	if s.cluster == "" {
		return s.clickhouse, nil
	}
	return store.ClusterDSN(s.clickhouse)
}

// migrate brings the schema up to date: the single-server migrations, or
// in cluster mode the cluster's.
func (s *storeFlags) migrate(ctx context.Context, conn driver.Conn) ([]string, error) {
	var applied []string
	var err error
	if s.cluster != "" {
		applied, err = store.MigrateCluster(ctx, conn, s.cluster)
	} else {
		applied, err = store.Migrate(ctx, conn)
	}
	if err != nil {
		return applied, fmt.Errorf("migrating the schema: %w", err)
	}
	return applied, nil
}

// open connects to the chosen server. With "local" and start set, it starts
// the managed server first and supervises it (serve); without start, it
// connects to the one a running serve recorded (migrate, report). The
// returned func releases both. s.local is the managed server, if any.
func (s *storeFlags) open(ctx context.Context, log *slog.Logger, start bool) (driver.Conn, func(), error) {
	if err := s.check(); err != nil {
		return nil, nil, err
	}
	dsn, err := s.dsn()
	if err != nil {
		return nil, nil, err
	}
	if dsn == "local" {
		// Its files name the server and hold its password: they must be
		// this user's alone (a missing dir is reported below, by name).
		if err := access.CheckPrivate(s.dataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("opening --data-dir: %w", err)
		}
	}
	var local *store.Local
	if dsn == "local" && start {
		local = &store.Local{Dir: filepath.Join(s.dataDir, "clickhouse"), Logger: log}
		if err := local.Start(ctx); err != nil {
			return nil, nil, err
		}
		local.Supervise()
		s.local = local
	}
	stopLocal := func() {
		if local != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := local.Stop(ctx); err != nil && log != nil {
				log.Error("stopping local ClickHouse", "err", err)
			}
		}
	}
	var conn driver.Conn
	switch {
	case local != nil:
		// Every connection of the pool checks that the socket it reaches
		// is the managed server's before it sends the password.
		conn, err = local.Open(ctx)
	case dsn == "local":
		conn, err = store.OpenLocal(ctx, filepath.Join(s.dataDir, "clickhouse"))
	case start:
		// serve with a DSN starts whether or not the server answers yet:
		// the probe does not need it, and reports are spooled until it
		// does (see prepare).
		conn, err = store.Dial(dsn)
	default:
		conn, err = store.Open(ctx, dsn)
	}
	if err != nil {
		stopLocal()
		return nil, nil, err
	}
	return conn, func() { conn.Close(); stopLocal() }, nil
}

// prepare waits until the server named by --clickhouse answers, creates the
// database if needed and migrates the schema, retrying with backoff; then
// it closes ready, which lets the spooled reports in. It gives up only when
// ctx ends.
func (s *storeFlags) prepare(ctx context.Context, log *slog.Logger, ready chan<- struct{}) {
	var lastLog time.Time
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 30*time.Second) {
		err := func() error {
			dsn, err := s.dsn()
			if err != nil {
				return err
			}
			conn, err := store.Open(ctx, dsn)
			if err != nil {
				return err
			}
			defer conn.Close()
			applied, err := s.migrate(ctx, conn)
			if len(applied) > 0 {
				log.Info("schema migrated", "applied", applied)
			}
			return err
		}()
		if err == nil {
			close(ready)
			if !lastLog.IsZero() {
				log.Info("ClickHouse answers; inserting the spooled reports")
			}
			return
		}
		if time.Since(lastLog) >= time.Minute {
			lastLog = time.Now()
			log.Error("ClickHouse is not ready; reports are spooled until it is", "err", err, "retry_in", wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
