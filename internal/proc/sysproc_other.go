//go:build !linux

package proc

import "syscall"

// SysProcAttr starts a command as the leader of its own process group.
// Outside Linux there is no parent-death signal: a killed eaglet leaves
// what it started running, kept or not.
func SysProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
