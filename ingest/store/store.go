// Package store owns h3rum's ClickHouse side: the connection, the schema
// and its migrations, the one definition of a samples row and its insert,
// retention, and the managed local server. Ingest writes through it and
// the reports read the tables it defines.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Open connects to the ClickHouse server named by dsn
// (clickhouse://user:pass@host:9000/db) over the native protocol. When the
// database does not exist yet it is created, which needs a user allowed to;
// a restricted production user works as long as the database exists.
func Open(ctx context.Context, dsn string) (driver.Conn, error) {
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing ClickHouse DSN: %w", err)
	}
	if opts.Protocol != clickhouse.Native {
		return nil, errors.New("parsing ClickHouse DSN: only the native protocol (clickhouse://host:9000) is supported")
	}
	conn, err := connect(ctx, opts)
	var ex *clickhouse.Exception
	if err == nil || !errors.As(err, &ex) || ex.Code != codeUnknownDatabase {
		return conn, err
	}
	db := opts.Auth.Database
	admin := *opts
	admin.Auth.Database = "default"
	aconn, err := connect(ctx, &admin)
	if err != nil {
		return nil, err
	}
	err = aconn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(db))
	aconn.Close()
	if err != nil {
		return nil, fmt.Errorf("creating database %s: %w", db, err)
	}
	return connect(ctx, opts)
}

// Dial returns a connection to the server named by dsn without contacting
// it: clickhouse-go dials on first use, and again after failures, so the
// connection starts working whenever the server does. Use it where the
// caller must not wait for the server (serve starting during an outage);
// Open, which checks the server and creates the database, once it answers.
func Dial(dsn string) (driver.Conn, error) {
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing ClickHouse DSN: %w", err)
	}
	if opts.Protocol != clickhouse.Native {
		return nil, errors.New("parsing ClickHouse DSN: only the native protocol (clickhouse://host:9000) is supported")
	}
	conn, err := clickhouse.Open(pin(closingGently(opts)))
	if err != nil {
		return nil, fmt.Errorf("connecting to ClickHouse: %w", err)
	}
	return conn, nil
}

// codeUnknownDatabase is ClickHouse's UNKNOWN_DATABASE error code.
const codeUnknownDatabase = 81

func connect(ctx context.Context, opts *clickhouse.Options) (driver.Conn, error) {
	conn, err := clickhouse.Open(pin(closingGently(opts)))
	if err != nil {
		return nil, fmt.Errorf("connecting to ClickHouse: %w", err)
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("connecting to ClickHouse: %w", err)
	}
	return conn, nil
}

func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "\\`") + "`"
}
