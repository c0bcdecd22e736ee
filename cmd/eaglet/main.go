// Command eaglet builds EAGLE-3 draft-model training data from a declarative
// YAML spec: load prompts, sample, tokenize, regenerate answers with the
// target model, filter, merge and hand off, checkpointed in SQLite.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
)

// Exit codes, stable for scripts.
const (
	exitOK          = 0
	exitFailure     = 1 // a run or command failed
	exitUsage       = 2 // bad flags or arguments
	exitSpec        = 3 // the spec does not validate
	exitChanges     = 4 // plan --detailed-exitcode: something would run
	exitInterrupted = 130
)

// command is one subcommand; each lives in its own file and registers in init.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cmdEnv, args []string) error
	// examples end the command's -h, as litestream's help does.
	examples []example
}

// example is one command line of a subcommand's help and what it does.
type example struct {
	about, line string
}

// cmdEnv is what a subcommand may touch of the outside world.
type cmdEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	lookupEnv      func(string) (string, bool)
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("eaglet: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// exitError carries a specific exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: eaglet COMMAND [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'eaglet COMMAND -h' for a command's flags and examples.")
}

func main() {
	env := &cmdEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, lookupEnv: os.LookupEnv}
	os.Exit(runMain(env, os.Args[1:]))
}

func runMain(env *cmdEnv, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "eaglet: unknown command %q\n\n", args[0])
		usage(env.stderr)
		return exitUsage
	}
	ctx, stop := interruptContext(env.stderr)
	defer stop()
	err := cmd.run(ctx, env, args[1:])
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(env.stderr, "eaglet %s: %v\n", cmd.name, ee.err)
		}
		return ee.code
	}
	if ctx.Err() != nil {
		fmt.Fprintf(env.stderr, "eaglet %s: interrupted: %v\n", cmd.name, err)
		return exitInterrupted
	}
	fmt.Fprintf(env.stderr, "eaglet %s: %v\n", cmd.name, err)
	return exitFailure
}

// interruptContext is cancelled by the first SIGINT/SIGTERM, so work stops
// dispatching and commits what finished; a second signal exits at once.
func interruptContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(stderr, engine.Stamp(time.Now()), "eaglet: interrupted: finishing in-flight work and committing (Ctrl-C again to abort)")
		cancel()
		<-sigs
		fmt.Fprintln(stderr, engine.Stamp(time.Now()), "eaglet: aborted")
		os.Exit(exitInterrupted)
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}
