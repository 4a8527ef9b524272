package store

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store/local"
)

// OpenManaged connects to the database of srv, a managed server this
// process runs, with the store's pinned settings. Each connection of the
// pool, after the server restarts too, is made only while the socket
// listening on the server's address is the server's own.
func OpenManaged(ctx context.Context, srv *local.Server) (driver.Conn, error) {
	opts, err := srv.Options()
	if err != nil {
		return nil, err
	}
	return connect(ctx, opts)
}

// OpenLocal connects to the managed server that a running `serve` keeps in
// dir, for `migrate` and `report`, with the store's pinned settings; like
// OpenManaged it sends the password only to the server's own socket
// (local.DirOptions).
func OpenLocal(ctx context.Context, dir string) (driver.Conn, error) {
	opts, err := local.DirOptions(dir)
	if err != nil {
		return nil, err
	}
	return connect(ctx, opts)
}
