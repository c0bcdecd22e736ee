// Package rusage reads what this process has used, for benchmarks that
// report CPU time beside wall time.
package rusage

import (
	"syscall"
	"time"
)

// CPU is the user and system CPU time this process has used so far (0 when
// the system does not say).
func CPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
