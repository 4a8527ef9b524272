package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// child is a server process under test.
type child struct {
	name     string
	cmd      *exec.Cmd
	stdin    io.Closer
	tcp, udp string // where to send HTTP/2 and HTTP/3 load
	pid      int    // the process whose CPU the load costs (pid= in READY; default the child)
}

func startChild(ctx context.Context, name, cert, key string, c config) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{exe, "-child", name, "-cert", cert, "-key", key, "-profile", c.profile}
	if c.cpus != "" {
		args = append([]string{"taskset", "-c", c.cpus}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s server: %w", name, err)
	}
	ch := &child{name: name, cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		ch.stop()
		return nil, fmt.Errorf("%s server did not start: %w", name, err)
	}
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "tcp="); ok {
			ch.tcp = v
		}
		if v, ok := strings.CutPrefix(f, "udp="); ok {
			ch.udp = v
		}
		if v, ok := strings.CutPrefix(f, "pid="); ok {
			ch.pid, _ = strconv.Atoi(v)
		}
	}
	if ch.tcp == "" || ch.udp == "" {
		ch.stop()
		return nil, fmt.Errorf("%s server said %q", name, line)
	}
	return ch, nil
}

// stop closes the child's stdin, which makes it exit, and waits.
func (c *child) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// cpuTime is the child's user+system CPU time so far, from /proc.
func (c *child) cpuTime() (time.Duration, error) {
	pid := c.pid
	if pid == 0 {
		pid = c.cmd.Process.Pid
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line, in clock ticks (100 per second).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}
