package rusage

import (
	"os"
	"os/exec"
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

// TestOf: a child that spins shows its CPU time through /proc, and a
// process that does not exist is an error.
func TestOf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done; sleep 5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var used time.Duration
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		u, err := Of(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if used = u; used >= 100*time.Millisecond {
			break
		}
	}
	if used < 100*time.Millisecond {
		t.Errorf("a shell counting to a million used %s of CPU by /proc; want 100 ms or more", used)
	}
	// /proc counts in hundredths of a second: spin well past one first.
	spins := 0
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		spins++
	}
	if self, err := Of(os.Getpid()); err != nil || self < 20*time.Millisecond {
		t.Errorf("Of(own pid) = %s, %v; want the 100 ms of CPU this test spun (%d turns) and more", self, err, spins)
	}
	if _, err := Of(1 << 30); err == nil {
		t.Error("Of(a pid that does not exist) succeeded; want an error")
	}
}
