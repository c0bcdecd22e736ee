package launch

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// tagEnv names the variable every launched command gets in its
// environment, holding its launch's Tag. Whatever the command starts
// inherits it (torchrun's workers, a shell's children, even one that left
// the process group), so a later run finds by it what a killed eaglet left
// running, and stops it before the shard is launched again.
const tagEnv = "EAGLET_LAUNCH"

// newTag returns a random tag for one launch: a process carries it only
// because that launch started it.
func newTag(shard int) string {
	var b [8]byte
	rand.Read(b[:])
	return strconv.Itoa(shard) + "-" + hex.EncodeToString(b[:])
}

// tagged returns, by tag, the processes other than eaglet itself whose
// environment holds tagEnv set to one of tags. It reads /proc, so it finds
// nothing where there is none (outside Linux) and only the processes of
// eaglet's own user, the only ones whose environment it may read.
func tagged(tags []string) map[string][]int {
	want := map[string]string{}
	for _, t := range tags {
		if t != "" {
			want[tagEnv+"="+t] = t
		}
	}
	if len(want) == 0 {
		return nil
	}
	paths, _ := filepath.Glob("/proc/[0-9]*/environ")
	found := map[string][]int{}
	for _, p := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(p)
		if err != nil {
			continue // gone, or another user's
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if t, ok := want[string(kv)]; ok {
				found[t] = append(found[t], pid)
				break
			}
		}
	}
	return found
}

// stop ends pids: SIGTERM, then SIGKILL to those still there after grace.
// It returns once they are gone, or a few seconds after the SIGKILL (a
// process stuck in the kernel cannot be waited for).
func stop(pids []int, grace time.Duration) {
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	if !waitGone(pids, grace) {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		waitGone(pids, 5*time.Second)
	}
}

// waitGone polls until none of pids exists, up to d; it reports whether
// they all went. A zombie (ended, not yet reaped by its parent) counts as
// gone: it holds no memory or device.
func waitGone(pids []int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		alive := false
		for _, pid := range pids {
			if running(pid) {
				alive = true
				break
			}
		}
		if !alive {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: the signal's answer is all there is
	}
	// The state follows the command name, which is in parentheses and may
	// hold anything, so look after the last one.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
