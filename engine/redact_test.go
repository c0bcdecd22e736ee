package engine

import (
	"errors"
	"syscall"
	"testing"
)

// TestRedacted_KeepsItsCause: a failed instance's error is printed with the
// spec's secrets scrubbed, yet still tells callers what happened (a full
// disk, for the run's hint).
func TestRedacted_KeepsItsCause(t *testing.T) {
	err := &redacted{"load[d]: *** no space left on device", syscall.ENOSPC}
	if !errors.Is(err, syscall.ENOSPC) || err.Error() != "load[d]: *** no space left on device" {
		t.Errorf("%v: want the scrubbed text, unwrapping to ENOSPC", err)
	}
}
