package access

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nobody is the owner given to files "planted by another user".
const nobody = 65534

// CheckPrivate, OpenPrivate and ReadPrivate refuse files and directories
// another user owns or may write, saying which path and what is wrong, and
// accept this user's own, readable by others or not.
func TestCheckPrivate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dir   bool
		mode  fs.FileMode
		owner int // -1: this user
		link  bool
		want  string // "" accepted
	}{
		{"own file", false, 0o600, -1, false, ""},
		{"own file, readable by all", false, 0o644, -1, false, ""},
		{"own directory", true, 0o750, -1, false, ""},
		{"own directory, 0700", true, 0o700, -1, false, ""},
		{"group may write", false, 0o660, -1, false, "its group may write it (mode 0660)"},
		{"others may write", false, 0o602, -1, false, "others may write it (mode 0602)"},
		{"everyone may write", true, 0o777, -1, false, "its group and others may write it (mode 0777)"},
		{"sticky world-writable directory", true, 0o777 | fs.ModeSticky, -1, false, "its group and others may write it"},
		{"another user's file", false, 0o600, nobody, false, "it is owned by uid 65534, not by this user"},
		{"another user's directory", true, 0o755, nobody, false, "it is owned by uid 65534"},
		{"another user's, writable", false, 0o666, nobody, false, "it is owned by uid 65534, not by this user (uid 0), and its group and others may write it"},
		{"link to another user's file", false, 0o600, nobody, true, "it is owned by uid 65534"},
		{"link to own file", false, 0o600, -1, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.owner >= 0 && os.Geteuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "password")
			if tc.dir {
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			if tc.owner >= 0 {
				if err := os.Chown(path, tc.owner, tc.owner); err != nil {
					t.Fatal(err)
				}
			}
			name := path
			if tc.link {
				name = filepath.Join(dir, "address")
				if err := os.Symlink(path, name); err != nil {
					t.Fatal(err)
				}
			}
			check := func(what string, err error) {
				t.Helper()
				if tc.want == "" {
					if err != nil {
						t.Errorf("%s: %v, want nil", what, err)
					}
					return
				}
				if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), name) ||
					strings.Contains(err.Error(), "\n") {
					t.Errorf("%s: %v; want ErrNotPrivate naming %s and %q, on one line", what, err, name, tc.want)
				}
			}
			check("CheckPrivate", CheckPrivate(name))
			f, err := OpenPrivate(name, os.O_RDONLY, 0)
			if err == nil {
				f.Close()
			}
			check("OpenPrivate", err)
			if !tc.dir {
				b, err := ReadPrivate(name)
				check("ReadPrivate", err)
				if err == nil && string(b) != "x\n" {
					t.Errorf("ReadPrivate = %q", b)
				}
			}
		})
	}
	if err := CheckPrivate(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotPrivate) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

// OpenPrivate creates a file that does not exist, and the file it checks is
// the one it opened.
func TestOpenPrivateCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.lock")
	f, err := OpenPrivate(path, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		return
	}
	os.Chown(path, nobody, nobody)
	if f, err := OpenPrivate(path, os.O_CREATE|os.O_RDWR, 0o640); !errors.Is(err, ErrNotPrivate) {
		if f != nil {
			f.Close()
		}
		t.Errorf("a planted lock file: %v, want ErrNotPrivate", err)
	}
}

// The data directory as each deploy target makes it, checked as the
// process that target runs: the image's user nonroot (65532:65532) for the
// containers, a service user and group of its own for systemd. The targets
// that give the directory to that user or to its group start; those that
// let another user write or own it are refused with the fix named.
func TestDataDirVolumes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making another user's directories needs root")
	}
	const (
		me    = 65532 // uid and gid of the process checked (the image's nonroot)
		root  = 0
		other = 1000 // another user, or a group that is not the process's own
	)
	for _, tc := range []struct {
		name       string
		uid, gid   int
		mode       fs.FileMode // permission bits
		setgid     bool
		sticky     bool
		want, hint string // want "": accepted; else what is wrong and a part of the fix
	}{
		// Docker and podman fill a new named volume from the image's
		// directory, owner and mode included (deploy/Dockerfile: 65532, 0755).
		{"compose named volume", me, me, 0o755, false, false, "", ""},
		// StateDirectory=h3rum with User=, Group= and StateDirectoryMode=0750.
		{"systemd StateDirectory", me, me, 0o750, false, false, "", ""},
		// A fresh PVC's root is root's; the kubelet gives it to fsGroup with
		// chown :fsGroup and chmod g+rwx,g+s (0755 → 2775).
		{"PVC with fsGroup, first mount", root, me, 0o775, true, false, "", ""},
		{"PVC with fsGroup, 2770", root, me, 0o770, true, false, "", ""},
		// A subdirectory h3rum made there (0750, setgid inherited) after the
		// kubelet's recursive change (fsGroupChangePolicy: Always) ORs in g+rw.
		{"PVC with fsGroup, h3rum's own subdirectory", me, me, 0o770, true, false, "", ""},
		// fsGroup without runAsGroup: the volume's group is a supplementary
		// group, not the process's own.
		{"PVC with another fsGroup", root, other, 0o775, true, false,
			"it is owned by uid 0, not by this user (uid 65532), and its group may write it (mode 2775)", "runAsGroup 65532"},
		// The group may write it but nothing marks it as a volume of that group.
		{"group-writable without setgid", me, me, 0o775, false, false,
			"its group may write it (mode 0775)", "chgrp 65532 and chmod 2770 it"},
		{"another user's setgid directory", other, me, 0o775, true, false,
			"it is owned by uid 1000, not by this user (uid 65532)", "chown 65532 and chmod 0750 it"},
		{"another user's directory", other, other, 0o755, false, false,
			"it is owned by uid 1000", "chown 65532"},
		// An emptyDir is 0777 (2777 with fsGroup); --tmpfs and a tmpfs mount are 1777.
		{"emptyDir", root, root, 0o777, false, false,
			"its group and others may write it (mode 0777)", "PersistentVolumeClaim with fsGroup 65532"},
		{"emptyDir with fsGroup", root, me, 0o777, true, false,
			"its group and others may write it (mode 2777)", "default --tmpfs or emptyDir"},
		{"--tmpfs", root, root, 0o777, false, true,
			"its group and others may write it (mode 1777)", "tmpfs with uid=65532,gid=65532,mode=0750"},
		{"own world-writable setgid directory", me, me, 0o777, true, false,
			"its group and others may write it (mode 2777)", "volume of its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h3rum")
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, tc.uid, tc.gid); err != nil {
				t.Fatal(err)
			}
			mode := tc.mode
			if tc.setgid {
				mode |= fs.ModeSetgid
			}
			if tc.sticky {
				mode |= fs.ModeSticky
			}
			if err := os.Chmod(path, mode); err != nil { // after chown, which clears setgid
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			err = checkPrivateAs(path, fi, me, me)
			if tc.want == "" {
				if err != nil {
					t.Errorf("%v, want it accepted", err)
				}
				return
			}
			if !errors.Is(err, ErrNotPrivate) || !strings.HasPrefix(err.Error(), "refusing "+path+": ") || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), tc.hint) {
				t.Errorf("%v;\nwant ErrNotPrivate saying %q and naming the fix (%q)", err, tc.want, tc.hint)
			}
		})
	}
}
