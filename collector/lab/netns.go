package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns` keeps the bind mounts that name namespaces.
const netnsDir = "/run/netns"

// Namespace is a named network namespace, as `ip netns` names them.
type Namespace string

// Do runs f on an OS thread that has entered the namespace, and waits for
// it. Sockets and TUN devices opened in f belong to the namespace for their
// whole life and may be used from any goroutine afterwards; goroutines f
// starts run in the caller's namespace, not in ns. If the thread cannot go
// back to its own namespace it is left locked, so that the runtime ends it.
func (ns Namespace) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("opening this thread's network namespace: %w", err)
			return
		}
		defer unix.Close(own)
		target, err := unix.Open(ns.path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("opening network namespace %s: %w", ns, err)
			return
		}
		err = unix.Setns(target, unix.CLONE_NEWNET)
		unix.Close(target)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering network namespace %s: %w", ns, err)
			return
		}
		ferr := f()
		if err := unix.Setns(own, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leaving network namespace %s: %w", ns, err))
			return // still locked: the thread dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func (ns Namespace) path() string { return filepath.Join(netnsDir, string(ns)) }

// exists reports whether the namespace's name is still there.
func (ns Namespace) exists() bool {
	_, err := os.Stat(ns.path())
	return !errors.Is(err, fs.ErrNotExist)
}

// create adds the namespace with `ip netns add`.
func (ns Namespace) create(ctx context.Context) error {
	return runIP(ctx, "", nil, "netns", "add", string(ns))
}

// remove deletes the namespace's name; the namespace itself goes when
// nothing else holds it (the lab closes its TUN devices first). A namespace
// that is already gone is no error.
func (ns Namespace) remove() error {
	if !ns.exists() {
		return nil
	}
	err := runIP(context.Background(), "", nil, "netns", "del", string(ns))
	if err != nil && !ns.exists() {
		return nil
	}
	return err
}

// ip runs `ip -batch -` in the namespace with one command per line.
func (ns Namespace) ip(ctx context.Context, lines ...string) error {
	return runIP(ctx, ns, []byte(strings.Join(lines, "\n")+"\n"), "-batch", "-")
}

func runIP(ctx context.Context, ns Namespace, stdin []byte, args ...string) error {
	if ns != "" {
		args = append([]string{"-n", string(ns)}, args...)
	}
	cmd := exec.CommandContext(ctx, "ip", args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		what := "ip " + strings.Join(args, " ")
		if stdin != nil {
			what += " <<< " + strings.ReplaceAll(strings.TrimSpace(string(stdin)), "\n", "; ")
		}
		return fmt.Errorf("%s: %w: %s", what, err, bytes.TrimSpace(out))
	}
	return nil
}
