package serve

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// stopSlack is what a stop command gets beyond the grace period: `kubectl
// delete` waits for the pods' own termination grace (30 s by default)
// before it returns, scancel and `ray job stop` return at once.
const stopSlack = time.Minute

// runCommand runs a submit or stop command to its end, its output
// appended to log, and returns that output (its first 64 KiB). The output
// goes to the file, not through a pipe, so a submit that leaves a process
// behind holding its stdout cannot make the wait hang.
func runCommand(ctx context.Context, argv []string, dir string, env []string, log *os.File) ([]byte, error) {
	from, err := log.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr(false)
	runErr := cmd.Run()
	out := make([]byte, 64<<10)
	n, _ := log.ReadAt(out, from)
	if runErr != nil {
		return out[:n], fmt.Errorf("%s: %s", filepath.Base(argv[0]), exitReason(runErr))
	}
	return out[:n], nil
}

// jobID finds a job's id in its submit's output: the pattern's first
// group, or its whole match when it has none.
func jobID(pattern *regexp.Regexp, out []byte) (string, bool) {
	m := pattern.FindSubmatch(out)
	switch {
	case m == nil:
		return "", false
	case len(m) > 1:
		return string(m[1]), true
	}
	return string(m[0]), true
}

// parseAddress turns where a job says it serves, a URL or host:port, into
// its API's base URL: a URL's own path is kept, none gets the API's.
func parseAddress(a string, api API) (string, error) {
	if !strings.Contains(a, "://") {
		a = "http://" + a
	}
	u, err := url.Parse(a)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("address %q is neither a URL nor host:port", a)
	}
	if u.Path = strings.TrimSuffix(u.Path, "/"); u.Path == "" {
		u.Path = api.path()
	}
	return u.String(), nil
}
