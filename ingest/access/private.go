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
// ErrNotPrivate that names path, what is wrong and how to fix it. h3rum
// adopts what it finds in its data directory (the managed ClickHouse's
// password, address and status files, the lock, the spool) with its own
// rights: a file another user planted or may change there, such as an
// address naming that user's server, would be used by root's `report` or
// `serve`.
//
// One directory shape is accepted besides: a volume shared with this
// process's own group, as Kubernetes' fsGroup makes it (see volumeDir).
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
	return checkPrivateAs(path, fi, os.Geteuid(), os.Getegid())
}

// checkPrivateAs is checkPrivate for a process of user uid and group gid.
func checkPrivateAs(path string, fi fs.FileInfo, uid, gid int) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("refusing %s: its owner is unknown: %w", path, ErrNotPrivate)
	}
	if volumeDir(fi, st, uid, gid) {
		return nil
	}
	mode := st.Mode & 0o7777 // as ls and chmod write it, setgid and sticky bits included
	var wrong []string
	if int(st.Uid) != uid {
		wrong = append(wrong, fmt.Sprintf("it is owned by uid %d, not by this user (uid %d)", st.Uid, uid))
	}
	if w := writers(fi.Mode().Perm()); w != "" {
		wrong = append(wrong, fmt.Sprintf("%s may write it (mode %04o)", w, mode))
	}
	if len(wrong) == 0 {
		return nil
	}
	return fmt.Errorf("refusing %s: %s; %s: %w", path, strings.Join(wrong, ", and "), fix(fi, uid, gid), ErrNotPrivate)
}

// volumeDir reports whether fi is a directory of the shape Kubernetes
// gives a volume mounted with fsGroup: group-owned by this process's own
// group (runAsGroup = fsGroup), setgid, writable by its owner and that
// group only, and owned by this user or by root (a fresh volume's root
// directory is root's, and root may change any file anyway). Only this
// user's group can then write it, which on a pod is the pod itself.
func volumeDir(fi fs.FileInfo, st *syscall.Stat_t, uid, gid int) bool {
	return fi.IsDir() && fi.Mode()&fs.ModeSetgid != 0 && int(st.Gid) == gid &&
		fi.Mode().Perm()&0o002 == 0 && (int(st.Uid) == uid || st.Uid == 0)
}

// fix says how to make fi acceptable to a process of user uid and group gid.
func fix(fi fs.FileInfo, uid, gid int) string {
	if !fi.IsDir() {
		return "h3rum uses only files its own user owns and no other user may write (chown or chmod it)"
	}
	rule := fmt.Sprintf("h3rum uses a directory its own user owns and no other user may write, "+
		"or a volume of its own group (gid %d, setgid, not world-writable: Kubernetes' fsGroup with runAsGroup %d)", gid, gid)
	if fi.Mode().Perm()&0o002 != 0 {
		// A default tmpfs (1777) or emptyDir (0777) is everyone's by how it is
		// made: a chmod inside the container would not last.
		return fmt.Sprintf("%s; a world-writable directory such as a default --tmpfs or emptyDir is every user's: "+
			"give it a volume of its own (a named volume, a tmpfs with uid=%d,gid=%d,mode=0750, a PersistentVolumeClaim with fsGroup %d)",
			rule, uid, gid, gid)
	}
	return fmt.Sprintf("%s: chown %d and chmod 0750 it, or chgrp %d and chmod 2770 it", rule, uid, gid)
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
