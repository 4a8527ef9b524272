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
