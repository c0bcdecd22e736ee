package proc

import "syscall"

// SysProcAttr starts a command as the leader of its own process group, so
// that stopping it reaches everything it starts (torchrun's workers,
// SGLang's scheduler, vLLM's engine core, tensor-parallel workers) and a
// Ctrl-C at eaglet's terminal is eaglet's to handle. Unless kept, the
// kernel also sends it SIGTERM when eaglet dies, even by SIGKILL.
//
// SIGTERM rather than SIGKILL: the parent-death signal reaches the command
// itself, not what it started, and torchrun, sbatch --wait, SGLang and
// vLLM stop their workers or jobs on SIGTERM where a SIGKILL would leave
// them running, holding the GPUs. The signal fires when the thread that
// started the command exits; Go ends a thread only when a goroutine exits
// locked to it, which eaglet never does, so in practice that is eaglet's
// exit.
func SysProcAttr(keep bool) *syscall.SysProcAttr {
	if keep {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
