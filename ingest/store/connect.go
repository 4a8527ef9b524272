package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store/local"
)

// Options choose the ClickHouse server a command uses (serve's, migrate's
// and report's --clickhouse, --data-dir and --cluster).
type Options struct {
	// ClickHouse is a DSN (clickhouse://user:pass@host:9000/db), or
	// local.DSN: the server serve manages under DataDir.
	ClickHouse string
	// DataDir holds the managed server's files (DataDir/clickhouse).
	DataDir string
	// Cluster, when set, is the remote_servers name of the cluster
	// ClickHouse belongs to: inserts get cluster mode's settings and
	// Migrate applies the cluster's migrations.
	Cluster string
	// Start, with local.DSN, starts the managed server and supervises it
	// (serve); without it, Connect reaches the one a running serve
	// recorded. With a DSN it makes Connect return without waiting for
	// the server (see Dial).
	Start bool
	// Logger logs the managed server's life; nil: slog.Default for it,
	// nothing for Close.
	Logger *slog.Logger
}

// dsn is ClickHouse with cluster mode's insert settings when Cluster is set.
func (o *Options) dsn() (string, error) {
	if o.Cluster == "" {
		return o.ClickHouse, nil
	}
	return ClusterDSN(o.ClickHouse)
}

// DB is a connection to the server Options chose and, when Connect started
// it, the managed server.
type DB struct {
	Conn  driver.Conn
	Local *local.Server // the managed server, if Connect started one

	opts Options
}

// Connect connects to the server o chooses, starting the managed one first
// when o says so. Close releases both.
func Connect(ctx context.Context, o Options) (*DB, error) {
	dsn, err := o.dsn()
	if err != nil {
		return nil, err
	}
	if dsn == local.DSN {
		// Its files name the server and hold its password: they must be
		// this user's alone (a missing dir is reported below, by name).
		if err := access.CheckPrivate(o.DataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("opening --data-dir: %w", err)
		}
	}
	db := &DB{opts: o}
	if dsn == local.DSN && o.Start {
		db.Local = &local.Server{Dir: filepath.Join(o.DataDir, "clickhouse"), Logger: o.Logger}
		if err := db.Local.Start(ctx); err != nil {
			return nil, err
		}
		db.Local.Supervise()
	}
	switch {
	case db.Local != nil:
		// Every connection of the pool checks that the socket it reaches
		// is the managed server's before it sends the password.
		db.Conn, err = OpenManaged(ctx, db.Local)
	case dsn == local.DSN:
		db.Conn, err = OpenLocal(ctx, filepath.Join(o.DataDir, "clickhouse"))
	case o.Start:
		// serve with a DSN starts whether or not the server answers yet:
		// the probe does not need it, and reports are spooled until it
		// does (see Prepare).
		db.Conn, err = Dial(dsn)
	default:
		db.Conn, err = Open(ctx, dsn)
	}
	if err != nil {
		db.stopLocal()
		return nil, err
	}
	return db, nil
}

// DialServer connects to the server at addr (host:port, as the cluster's
// system.clusters lists it) with the database, user and password of the
// DSN: in cluster mode, another server of the cluster.
func (db *DB) DialServer(ctx context.Context, addr string) (driver.Conn, error) {
	dsn, err := db.opts.dsn()
	if err != nil {
		return nil, err
	}
	if dsn == local.DSN {
		return nil, errors.New("connecting to another server: the managed ClickHouse is one server")
	}
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing ClickHouse DSN: %w", err)
	}
	opts.Addr = []string{addr}
	return connect(ctx, opts)
}

// Close closes the connection and stops the managed server, if any.
func (db *DB) Close() {
	db.Conn.Close()
	db.stopLocal()
}

func (db *DB) stopLocal() {
	if db.Local == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.Local.Stop(ctx); err != nil && db.opts.Logger != nil {
		db.opts.Logger.Error("stopping local ClickHouse", "err", err)
	}
}

// Migrate brings the schema up to date: the single-server migrations, or
// in cluster mode the cluster's. It returns the migrations it applied.
func (db *DB) Migrate(ctx context.Context) ([]string, error) {
	return db.migrate(ctx, db.Conn)
}

func (db *DB) migrate(ctx context.Context, conn driver.Conn) ([]string, error) {
	var applied []string
	var err error
	if db.opts.Cluster != "" {
		applied, err = MigrateCluster(ctx, conn, Cluster{Name: db.opts.Cluster, Dial: db.DialServer})
	} else {
		applied, err = Migrate(ctx, conn)
	}
	if err != nil {
		return applied, fmt.Errorf("migrating the schema: %w", err)
	}
	return applied, nil
}

// Prepare waits until the server answers, creates the database if needed
// and migrates the schema, retrying with backoff; then it closes ready,
// which lets the spooled reports in. It gives up only when ctx ends. It is
// for a server named by a DSN, which serve does not wait for at start-up.
func (db *DB) Prepare(ctx context.Context, ready chan<- struct{}) {
	log := db.opts.Logger
	if log == nil {
		log = slog.Default()
	}
	var lastLog time.Time
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 30*time.Second) {
		err := func() error {
			dsn, err := db.opts.dsn()
			if err != nil {
				return err
			}
			conn, err := Open(ctx, dsn)
			if err != nil {
				return err
			}
			defer conn.Close()
			applied, err := db.migrate(ctx, conn)
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
