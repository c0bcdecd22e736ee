package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/eaglet-dev/eaglet/state"
)

// openStore opens the spec's state store, saying why when SQLite's own
// message misleads: on a read-only mount it reports "unable to open
// database file: no such file or directory" for a store that exists.
func openStore(path string) (*state.Store, error) {
	s, err := state.Open(path)
	if err != nil {
		if why := unwritable(path); why != "" {
			return nil, fmt.Errorf("open state %s: %s; eaglet writes the store and its -wal and -shm files beside it, even to read it: copy the directory somewhere writable, or point `state:` there", path, why)
		}
	}
	return s, err
}

// unwritable says why eaglet cannot write the store or its directory, or
// "" when it can.
func unwritable(path string) string {
	dir := filepath.Dir(path)
	for _, p := range []string{path, dir} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		switch err := unix.Access(p, unix.W_OK); {
		case errors.Is(err, unix.EROFS):
			return fmt.Sprintf("%s is on a read-only file system", p)
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			return fmt.Sprintf("no permission to write %s", p)
		}
	}
	return ""
}
