package access

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// ErrNotPrivate marks a file or directory h3rum refuses to use because
// another user owns it or may change it.
var ErrNotPrivate = errors.New("not private to this user")

// CheckPrivate returns nil when path (the target, if it is a symbolic
// link) is owned by the user h3rum runs as and no one else may write it
// (neither its group nor others), and otherwise an error wrapping
// ErrNotPrivate that names path and what is wrong. h3rum adopts what it
// finds in its data directory (the managed ClickHouse's password, address
// and status files, the lock, the spool) with its own rights: a file
// another user planted or may change there, such as an address naming
// that user's server, would be used by root's `report` or `serve`.
func CheckPrivate(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkPrivate(path, fi)
}

// OpenPrivate is os.OpenFile for a file CheckPrivate accepts. It checks the
// file it opened, not the name, so a file swapped in after a check is not
// the one used; a file it refuses is closed.
func OpenPrivate(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkPrivate(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadPrivate reads the file at path if CheckPrivate accepts it.
func ReadPrivate(path string) ([]byte, error) {
	f, err := OpenPrivate(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func checkPrivate(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("refusing %s: its owner is unknown: %w", path, ErrNotPrivate)
	}
	var wrong []string
	if uid := os.Geteuid(); int(st.Uid) != uid {
		wrong = append(wrong, fmt.Sprintf("it is owned by uid %d, not by this user (uid %d)", st.Uid, uid))
	}
	if w := writers(fi.Mode().Perm()); w != "" {
		wrong = append(wrong, fmt.Sprintf("%s may write it (mode %04o)", w, fi.Mode().Perm()))
	}
	if len(wrong) == 0 {
		return nil
	}
	return fmt.Errorf("refusing %s: %s; h3rum uses only files and directories its own user owns and no other user may write (chown or chmod it): %w",
		path, strings.Join(wrong, ", and "), ErrNotPrivate)
}

// writers names who besides the owner may write a file of mode m.
func writers(m fs.FileMode) string {
	switch m & 0o022 {
	case 0o022:
		return "its group and others"
	case 0o020:
		return "its group"
	case 0o002:
		return "others"
	}
	return ""
}
