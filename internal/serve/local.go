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
)

// launch starts a local replica's server on port, its output appended to
// its log, and watches for its exit.
func (r *Replica) launch(port int) error {
	g := r.g
	argv, err := expandAll(g.s.Argv, map[string]string{
		"port": strconv.Itoa(port), "replica": strconv.Itoa(r.Index), "gpus": strings.Join(r.GPUs, ","),
	})
	if err != nil {
		return r.startError(err)
	}
	r.Log = r.replicaFile("log")
	logf, err := os.OpenFile(r.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return r.startError(err)
	}
	// The server holds its own copy of the file.
	defer logf.Close()
	devices := ""
	if len(r.GPUs) > 0 {
		devices = ", CUDA_VISIBLE_DEVICES=" + strings.Join(r.GPUs, ",")
	}
	fmt.Fprintf(logf, "=== eaglet: %s replica %d on port %d%s, started %s: %s\n", g.cfg.Name, r.Index, port, devices,
		r.StartedAt.Format(time.RFC3339), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = g.cfg.Dir
	cmd.Env = g.environ
	if len(r.GPUs) > 0 {
		cmd.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], "CUDA_VISIBLE_DEVICES="+strings.Join(r.GPUs, ","))
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(g.s.Keep)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(logf, "=== eaglet: %v\n", err)
		return r.startError(fmt.Errorf("start %s: %w", filepath.Base(argv[0]), err))
	}
	r.PID = cmd.Process.Pid
	r.URL = "http://127.0.0.1:" + strconv.Itoa(port) + g.cfg.API.path()
	r.exited = make(chan struct{})
	go func() {
		r.exitErr = cmd.Wait()
		close(r.exited)
	}()
	g.cfg.Logf("%s replica %d: started (pid %d, port %d%s), log %s", g.cfg.Name, r.Index, r.PID, port, devices, r.Log)
	return nil
}

// kill stops a local server's process group: SIGTERM, and SIGKILL to
// whatever of it is left when the grace period ends. The leader's exit is
// not the end: SGLang and vLLM workers may finish their own shutdown
// after it, and a worker that ignores SIGTERM would hold its GPU.
func (r *Replica) kill() error {
	grace := r.g.s.grace
	deadline := time.Now().Add(grace)
	syscall.Kill(-r.PID, syscall.SIGTERM)
	t := time.NewTimer(grace)
	select {
	case <-r.exited:
	case <-t.C:
	}
	t.Stop()
	if !groupGone(r.PID, time.Until(deadline)) {
		syscall.Kill(-r.PID, syscall.SIGKILL)
		if !groupGone(r.PID, 5*time.Second) {
			return fmt.Errorf("%s replica %d: processes of group %d still running after SIGKILL", r.g.cfg.Name, r.Index, r.PID)
		}
	}
	<-r.exited
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

// exitReason says how a process ended.
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
