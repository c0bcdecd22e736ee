package launch

import "syscall"

// sysProcAttr starts a command as the leader of its own process group, so
// that stopping it reaches what it started (torchrun's workers) and a
// Ctrl-C at eaglet's terminal is eaglet's to handle, and has the kernel
// send it SIGTERM when eaglet dies, even by SIGKILL.
//
// The parent-death signal reaches the command itself, not what it
// started, so it is SIGTERM rather than SIGKILL: torchrun, sbatch --wait
// and the like stop their workers or jobs on SIGTERM, and would leave them
// running if killed outright. A command that ignores it, and anything it
// leaves behind, is stopped by the next run before its shard is launched
// again (stopLeftovers). The signal fires when the thread that started the
// command exits; Go ends a thread only when a goroutine exits locked to
// it, which eaglet never does, so in practice that is eaglet's exit.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
