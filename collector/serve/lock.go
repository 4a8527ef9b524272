package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/h3rum/h3rum/ingest/access"
)

// lockDataDir takes an exclusive lock on dir for this process, so that a
// second `serve` on the same --data-dir fails at once instead of sharing
// (or stopping) the first one's spool and local ClickHouse. The kernel
// drops the lock when the process exits, however it exits. dir and the
// lock file must be this user's and writable by no one else
// (access.CheckPrivate).
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	// What serve adopts from the data dir must be this user's alone.
	if err := access.CheckPrivate(dir); err != nil {
		return nil, fmt.Errorf("opening --data-dir: %w", err)
	}
	path := filepath.Join(dir, "serve.lock")
	f, err := access.OpenPrivate(path, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another h3rum serve is using --data-dir %s (%s is locked)", dir, path)
	}
	return func() { f.Close() }, nil
}
