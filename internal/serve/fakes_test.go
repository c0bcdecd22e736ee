package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
)

// The fakes are this test binary run under another name: TestMain links
// each name to it in a directory it puts first on PATH, and dispatches on
// the name it is run as. fake-server is eaglet's sim server behind knobs
// for the ways a real one starts, fails and hangs; sbatch, scancel,
// kubectl and ray are schedulers whose "jobs" are processes in sessions of
// their own, as a scheduler's outlive the submit; serve-driver is an
// eaglet that starts a server and waits to be killed.
var fakes = map[string]func(args []string) int{
	"fake-server":  fakeServer,
	"sbatch":       fakeSbatch,
	"scancel":      fakeCancel,
	"kubectl":      fakeKubectl,
	"ray":          fakeRay,
	"serve-driver": serveDriver,
}

func TestMain(m *testing.M) {
	if fake, ok := fakes[filepath.Base(os.Args[0])]; ok {
		os.Exit(fake(os.Args[1:]))
	}
	os.Exit(runTests(m))
}

// bin is the directory of the fakes' links, first on PATH.
var bin string

func runTests(m *testing.M) int {
	var err error
	if bin, err = os.MkdirTemp("", "serve-fakes"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(bin)
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for name := range fakes {
		if err := os.Symlink(exe, filepath.Join(bin, name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return m.Run()
}

// fakeServer serves the sim model until it is stopped.
func fakeServer(args []string) int {
	fs := flag.NewFlagSet("fake-server", flag.ContinueOnError)
	port := fs.Int("port", 0, "port to listen on (0: any, reported in -address-file)")
	addressFile := fs.String("address-file", "", "file to write host:port to once listening, as a job does")
	addressURL := fs.Bool("address-url", false, "write the address as a URL")
	load := fs.Duration("load", 0, "how long loading the model takes, before listening")
	starting := fs.Duration("starting", 0, "how long /health answers 503 once listening")
	lines := fs.Int("lines", 0, "lines of loading output to print first")
	exit := fs.Int("exit", -1, "exit with this status after loading instead of serving")
	exitReplica := fs.Int("exit-replica", -1, "exit with status 1 after loading when -replica is this")
	replica := fs.Int("replica", -1, "the replica index eaglet gave")
	gpus := fs.String("gpus", "", "the devices eaglet gave as {gpus}")
	noHealth := fs.Bool("no-health", false, "serve no /health (404), as some OpenAI-compatible servers")
	hang := fs.Bool("hang", false, "generations hang until the client gives up; /health still answers")
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM")
	child := fs.String("child", "", "start a worker in the process group and write its pid here")
	sleep := fs.Bool("sleep", false, "be a worker: sleep until killed")
	pidFile := fs.String("pid-file", "", "write the pid here")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if *pidFile != "" {
		os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	if *sleep {
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Printf("fake-server: replica %d, {gpus} %q, CUDA_VISIBLE_DEVICES=%s, EAGLET_REPLICA=%s\n",
		*replica, *gpus, os.Getenv("CUDA_VISIBLE_DEVICES"), os.Getenv("EAGLET_REPLICA"))
	if *child != "" {
		cmd := exec.Command(os.Args[0], "-sleep", "-ignore-term")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.WriteFile(*child, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	}
	for i := range *lines {
		fmt.Fprintf(os.Stderr, "loading line %d\n", i+1)
	}
	time.Sleep(*load)
	if *exit >= 0 {
		fmt.Fprintln(os.Stderr, "torch.OutOfMemoryError: CUDA out of memory")
		return *exit
	}
	if *exitReplica >= 0 && *exitReplica == *replica {
		fmt.Fprintln(os.Stderr, "RuntimeError: NCCL error")
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	up := time.Now()
	sim, err := server.New(server.Config{Model: sim.New(sim.Config{MeanTokens: 300, Sigma: 1, MaxLen: 32768})})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case *noHealth:
			http.NotFound(w, r)
		case time.Since(up) < *starting:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		if *hang {
			// Read to the end, or the server does not notice the client leave.
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		sim.ServeHTTP(w, r)
	})
	mux.Handle("/", sim)
	if *addressFile != "" {
		addr := ln.Addr().String()
		if *addressURL {
			addr = "http://" + addr
		}
		// Written whole, then renamed, as a careful job script does.
		os.WriteFile(*addressFile+".tmp", []byte(addr+"\n"), 0o644)
		os.Rename(*addressFile+".tmp", *addressFile)
	}
	fmt.Fprintf(os.Stderr, "fake-server: serving on %s\n", ln.Addr())
	return exitCode(http.Serve(ln, mux))
}

func exitCode(err error) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startJob runs a job's command in a session of its own, its output in
// $FAKE_JOBS/<name>.out, and records its pid under the id that name(pid)
// gives it.
func startJob(command []string, name func(pid int) string) (string, error) {
	jobs := os.Getenv("FAKE_JOBS")
	tmp := filepath.Join(jobs, "pending-"+randomHex()+".out")
	out, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	defer out.Close()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	id := name(cmd.Process.Pid)
	if err := os.Rename(tmp, filepath.Join(jobs, id+".out")); err != nil {
		return "", err
	}
	return id, os.WriteFile(filepath.Join(jobs, id+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// stopJob ends a job's session, as a scheduler ends all of a job's steps.
func stopJob(id string) error {
	pidFile := filepath.Join(os.Getenv("FAKE_JOBS"), id+".pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("no job %s", id)
	}
	pid, _ := strconv.Atoi(string(b))
	syscall.Kill(-pid, syscall.SIGTERM)
	if !groupGone(pid, 5*time.Second) {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	return os.Remove(pidFile)
}

func randomHex() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// fakeSbatch takes `sbatch [--job-name N] --wrap "COMMAND"`; --fail
// refuses the job as a bad account does.
func fakeSbatch(args []string) int {
	if slices.Contains(args, "--fail") {
		fmt.Fprintln(os.Stderr, "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified")
		return 1
	}
	i := slices.Index(args, "--wrap")
	if i < 0 || i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "sbatch: error: this fake takes --wrap")
		return 1
	}
	id, err := startJob(strings.Fields(args[i+1]), func(pid int) string { return "slurm-" + strconv.Itoa(pid) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbatch: error:", err)
		return 1
	}
	fmt.Println("Submitted batch job " + strings.TrimPrefix(id, "slurm-"))
	return 0
}

// fakeCancel is scancel JOBID.
func fakeCancel(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "scancel: error: want one job id")
		return 1
	}
	if err := stopJob("slurm-" + args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "scancel: error: Kill job error on job id %s: Invalid job id specified\n", args[0])
		return 1
	}
	return 0
}

// fakeKubectl takes `kubectl create job NAME --image=I -- COMMAND...` and
// `kubectl delete job NAME`.
func fakeKubectl(args []string) int {
	switch {
	case len(args) >= 3 && args[0] == "create" && args[1] == "job" && slices.Contains(args, "--"):
		name := args[2]
		if _, err := startJob(args[slices.Index(args, "--")+1:], func(int) string { return name }); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		fmt.Printf("job.batch/%s created\n", name)
	case len(args) == 3 && args[0] == "delete" && args[1] == "job":
		if err := stopJob(args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "Error from server (NotFound): jobs.batch %q not found\n", args[2])
			return 1
		}
		fmt.Printf("job.batch %q deleted\n", args[2])
	default:
		fmt.Fprintln(os.Stderr, "kubectl: this fake takes create job and delete job")
		return 1
	}
	return 0
}

// fakeRay takes `ray job submit [flags] -- COMMAND...` and `ray job stop ID`.
func fakeRay(args []string) int {
	switch {
	case len(args) >= 2 && args[0] == "job" && args[1] == "submit" && slices.Contains(args, "--"):
		id, err := startJob(args[slices.Index(args, "--")+1:], func(int) string { return "raysubmit_" + randomHex() })
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		fmt.Printf("Job submission server address: http://127.0.0.1:8265\n\n-------------------------------------------------------\nJob '%s' submitted successfully\n", id)
	case len(args) == 3 && args[0] == "job" && args[1] == "stop":
		if err := stopJob(args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "RuntimeError: Job %s does not exist\n", args[2])
			return 1
		}
		fmt.Printf("Job '%s' was stopped\n", args[2])
	default:
		fmt.Fprintln(os.Stderr, "ray: this fake takes job submit and job stop")
		return 1
	}
	return 0
}

// serveDriver starts one local fake server as eaglet would, writes the
// server's pid to the file its first argument names, and waits for its
// end: the test kills it with SIGKILL, which no code of its can see.
func serveDriver(args []string) int {
	dir := filepath.Dir(args[0])
	g, err := Start(context.Background(), Config{Name: "driven", API: SGLang, LogDir: dir,
		Options: Options{Argv: []string{"fake-server", "-port", "{port}"}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.WriteFile(args[0], []byte(strconv.Itoa(g.Replicas()[0].PID)), 0o644)
	select {}
}
