//go:build !linux

package launch

import "syscall"

// sysProcAttr starts a command as the leader of its own process group.
// Outside Linux there is no parent-death signal nor /proc to find a
// launch's processes by their tag: a killed eaglet leaves its running
// commands behind, and the next run launches their shards again.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
