//go:build unix

// Package firefox runs headless Firefox (Debian's firefox-esr) against
// loopback servers, for end-to-end tests of the beacon and the collector:
// a fresh profile that trusts a given CA and keeps HTTP/3 on.
package firefox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/h3rum/h3rum/beacon/internal/tail"
)

// DefaultPath is where Debian installs Firefox ESR (make test installs it).
const DefaultPath = "/usr/bin/firefox-esr"

// Options configure a Firefox run. The zero value is usable.
type Options struct {
	// Path of the Firefox binary; "" means DefaultPath, then firefox-esr
	// or firefox on $PATH.
	Path string
	// CAFile is a PEM CA certificate the profile trusts for servers
	// (imported with NSS's certutil, Debian's libnss3-tools).
	CAFile string
	// Prefs are extra user.js preferences, name to JavaScript literal.
	Prefs map[string]string
}

// prefs every run gets: no first-run pages, updates or telemetry, and
// HTTP/3 kept on although a user-imported root (CAFile) is present —
// Firefox turns HTTP/3 off then, by default.
var prefs = map[string]string{
	"network.http.http3.enable":                               "true",
	"network.http.http3.disable_when_third_party_roots_found": "false",
	"browser.shell.checkDefaultBrowser":                       "false",
	"browser.startup.homepage_override.mstone":                `"ignore"`,
	"app.update.enabled":                                      "false",
	"app.update.auto":                                         "false",
	"datareporting.policy.dataSubmissionEnabled":              "false",
	"datareporting.healthreport.uploadEnabled":                "false",
	"toolkit.telemetry.enabled":                               "false",
	"browser.safebrowsing.malware.enabled":                    "false",
	"browser.safebrowsing.phishing.enabled":                   "false",
	"network.captive-portal-service.enabled":                  "false",
	"network.connectivity-service.enabled":                    "false",
}

// Find returns the Firefox binary to run, or an error that says how to
// install it.
func Find(path string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("firefox %q: %w", path, err)
		}
		return path, nil
	}
	if _, err := os.Stat(DefaultPath); err == nil {
		return DefaultPath, nil
	}
	for _, name := range []string{"firefox-esr", "firefox"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Firefox: install it (Debian: apt-get install firefox-esr libnss3-tools; make test does)")
}

// Browser is a running headless Firefox with a profile of its own.
type Browser struct {
	cmd     *exec.Cmd
	profile string
	done    chan struct{}
	out     *tail.Buffer
	once    sync.Once
}

// Start makes a fresh profile (trusting opts.CAFile) and opens url in
// headless Firefox. Close it when done.
func Start(ctx context.Context, url string, opts Options) (*Browser, error) {
	bin, err := Find(opts.Path)
	if err != nil {
		return nil, err
	}
	profile, err := os.MkdirTemp("", "h3rum-firefox-")
	if err != nil {
		return nil, fmt.Errorf("firefox profile: %w", err)
	}
	b := &Browser{profile: profile, done: make(chan struct{}), out: &tail.Buffer{Max: 8 << 10}}
	if err := b.prepare(ctx, opts); err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	b.cmd = exec.Command(bin, "--headless", "--no-remote", "--profile", profile, url)
	// As root, Firefox's sandboxes keep https pages from loading.
	b.cmd.Env = append(os.Environ(), "MOZ_DISABLE_CONTENT_SANDBOX=1", "MOZ_DISABLE_SOCKET_PROCESS_SANDBOX=1", "MOZ_HEADLESS=1")
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("starting firefox: %w", err)
	}
	go func() { b.cmd.Wait(); close(b.done) }()
	return b, nil
}

// prepare writes the profile: the CA in its NSS database and user.js.
func (b *Browser) prepare(ctx context.Context, opts Options) error {
	if opts.CAFile != "" {
		certutil, err := exec.LookPath("certutil")
		if err != nil {
			return errors.New("no certutil to make Firefox trust the CA: install it (Debian: apt-get install libnss3-tools; make test does)")
		}
		db := "sql:" + b.profile
		for _, args := range [][]string{
			{"-N", "-d", db, "--empty-password"},
			{"-A", "-d", db, "-t", "C,,", "-n", "h3rum test CA", "-i", opts.CAFile},
		} {
			if out, err := exec.CommandContext(ctx, certutil, args...).CombinedOutput(); err != nil {
				return fmt.Errorf("certutil %s: %v: %s", args[0], err, bytes.TrimSpace(out))
			}
		}
	}
	var js strings.Builder
	for _, m := range []map[string]string{prefs, opts.Prefs} {
		for k, v := range m {
			fmt.Fprintf(&js, "user_pref(%q, %s);\n", k, v)
		}
	}
	if err := os.WriteFile(filepath.Join(b.profile, "user.js"), []byte(js.String()), 0o644); err != nil {
		return fmt.Errorf("firefox profile: %w", err)
	}
	return nil
}

// Done is closed when Firefox has exited.
func (b *Browser) Done() <-chan struct{} { return b.done }

// Output returns the last 8 KiB Firefox wrote to stdout and stderr.
func (b *Browser) Output() string { return b.out.String() }

// Close kills Firefox's whole process group, waits for it (bounded) and
// removes the profile.
func (b *Browser) Close() error {
	var err error
	b.once.Do(func() {
		if e := syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL); e != nil && !errors.Is(e, syscall.ESRCH) {
			err = fmt.Errorf("killing firefox: %w", e)
		}
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			err = errors.Join(err, errors.New("firefox did not exit within 10 s of SIGKILL"))
		}
		os.RemoveAll(b.profile)
	})
	return err
}
