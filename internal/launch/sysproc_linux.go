package launch

import "syscall"

// sysProcAttr starts a command as the leader of its own process group, so
// that stopping it reaches what it started (torchrun's workers) and a
// Ctrl-C at eaglet's terminal is eaglet's to handle, and has the kernel
// kill it when eaglet dies, even by SIGKILL.
//
// The parent-death signal fires when the thread that started the command
// exits; Go ends a thread only when a goroutine exits locked to it, which
// eaglet never does, so in practice that is eaglet's exit. It reaches the
// command itself, not what the command started: workers of a command
// killed with eaglet outlive it unless the command arranges their end.
// Ctrl-C, by contrast, signals the whole group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
