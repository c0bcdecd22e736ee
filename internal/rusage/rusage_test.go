package rusage

import (
	"testing"
	"time"
)

// TestCPU: spinning for a while shows as CPU time used.
func TestCPU(t *testing.T) {
	before := CPU()
	x := 0
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		x++
	}
	if used := CPU() - before; used < 10*time.Millisecond {
		t.Errorf("50 ms of spinning (%d turns) used %s of CPU; want most of it", x, used)
	}
}
