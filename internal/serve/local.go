package serve

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/eaglet-dev/eaglet/internal/proc"
)

// process is a server started on this machine: the leader of a process
// group of its own.
type process struct {
	pid int
	// exited is closed when the leader has ended, err then says why.
	exited chan struct{}
	err    error
}

// startProcess starts argv, its output appended to log, as the leader of
// its own process group (and, unless kept, to get SIGTERM at eaglet's
// death), and watches for its end.
func startProcess(argv []string, dir string, env []string, log *os.File, keep bool) (*process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = proc.SysProcAttr(keep)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(argv[0]), err)
	}
	p := &process{pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// kill stops the process group: SIGTERM, and SIGKILL to whatever of it is
// left when the grace period ends. The leader's exit is not the end:
// SGLang and vLLM workers may finish their own shutdown after it, and a
// worker that ignores SIGTERM would hold its GPU.
func (p *process) kill(grace time.Duration) error {
	if err := killGroup(p.pid, grace, p.exited); err != nil {
		return err
	}
	<-p.exited
	return nil
}

// killGroup sends SIGTERM to process group pgid and SIGKILL to what is
// left of it after grace. The wait ends early when exited (a leader of
// this eaglet's; nil for one it did not start) is closed and the group
// is gone.
func killGroup(pgid int, grace time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(grace)
	syscall.Kill(-pgid, syscall.SIGTERM)
	if exited != nil {
		t := time.NewTimer(grace)
		select {
		case <-exited:
		case <-t.C:
		}
		t.Stop()
	}
	if !groupGone(pgid, time.Until(deadline)) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		if !groupGone(pgid, 5*time.Second) {
			return fmt.Errorf("processes of group %d still running after SIGKILL", pgid)
		}
	}
	return nil
}

// groupGone polls until no live process is left in process group pgid, up
// to d, and reports whether none is. Zombies count as gone: they hold no
// memory or device, and one whose parent died waits for an init that
// may never reap it (in a container).
func groupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if syscall.Kill(-pgid, 0) != nil || !groupAlive(pgid) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupAlive reports whether /proc lists a process of group pgid that is
// not a zombie; without /proc it trusts the signal that found one.
func groupAlive(pgid int) bool {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return true
	}
	for _, p := range stats {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// After the command name, which is in parentheses and may hold
		// anything: state, ppid, pgrp.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// exitReason says how a command ended.
func exitReason(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return ee.Error()
	}
	return err.Error()
}
