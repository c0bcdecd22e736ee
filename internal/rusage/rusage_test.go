package rusage

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// tick is /proc's unit: a reading of it may lag the true time by one for
// user time and one for system time.
const tick = time.Second / userHZ

// spinUntil does work until CPU() reaches at least d. A loaded machine
// gives the process less of each second, so the loop is bounded by the work
// it waits for, not by the clock; the deadline only keeps a CPU that never
// moves from hanging the test.
func spinUntil(t *testing.T, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); CPU() < d; {
		if time.Now().After(deadline) {
			t.Fatalf("CPU() stayed at %s through a minute of spinning; want it to reach %s", CPU(), d)
		}
	}
}

// TestCPU: work shows as CPU time, which never goes back.
func TestCPU(t *testing.T) {
	before := CPU()
	spinUntil(t, before+20*time.Millisecond)
	if after := CPU(); after < before+20*time.Millisecond {
		t.Errorf("CPU() went from %s to %s after spinning past %s", before, after, before+20*time.Millisecond)
	}
}

// TestOf: /proc gives a child the CPU time it sees itself using, and this
// process the time CPU reports; a process that does not exist is an error.
func TestOf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	// The shell counts, reports its own CPU time (the times builtin), and
	// becomes a sleep, which keeps its pid and the time it used.
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; times; exec sleep 60")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the shell's times: %v", err)
	}
	var um, sm int
	var us, ss float64
	if _, err := fmt.Sscanf(line, "%dm%fs %dm%fs", &um, &us, &sm, &ss); err != nil {
		t.Fatalf("the shell's times %q: %v", line, err)
	}
	own := time.Duration((float64(um+sm)*60 + us + ss) * float64(time.Second))
	if own == 0 {
		t.Fatalf("a shell counting to 200,000 says it used no CPU (%q): the test cannot tell", line)
	}
	if used, err := Of(cmd.Process.Pid); err != nil || used < own-2*tick {
		t.Errorf("Of(child) = %s, %v; want at least the %s the shell reported (%q)", used, err, own, line)
	}

	spinUntil(t, 50*time.Millisecond)
	before := CPU()
	self, err := Of(os.Getpid())
	after := CPU()
	if err != nil || self < before-2*tick || self > after {
		t.Errorf("Of(own pid) = %s, %v; want what CPU says, between %s and %s, to the hundredth of a second", self, err, before, after)
	}
	if _, err := Of(1 << 30); err == nil {
		t.Error("Of(a pid that does not exist) succeeded; want an error")
	}
}
