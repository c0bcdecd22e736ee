package serve

import "syscall"

// sysProcAttr starts a command as the leader of its own process group, so
// that a stop reaches everything a server starts (SGLang's scheduler and
// detokenizer, vLLM's engine core, tensor-parallel workers) and a Ctrl-C at
// eaglet's terminal is eaglet's to handle. Unless the server is kept, the
// kernel also sends it SIGTERM when eaglet dies, even by SIGKILL: SIGTERM,
// not SIGKILL, because SGLang and vLLM stop their own worker processes on
// SIGTERM, and killing the leader alone would leave them holding the GPUs.
func sysProcAttr(keep bool) *syscall.SysProcAttr {
	if keep {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
