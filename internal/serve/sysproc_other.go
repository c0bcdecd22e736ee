//go:build !linux

package serve

import "syscall"

// sysProcAttr starts a command as the leader of its own process group.
// Outside Linux there is no parent-death signal: a killed eaglet leaves
// its servers running, kept or not.
func sysProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
