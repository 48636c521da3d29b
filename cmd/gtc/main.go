// Command gtc is the Ground Truth Curator backend: the HTTP API server and the maintenance
// commands, in one binary.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is the product version; release builds set it with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// Exit codes shared by every command (export-storage-migration.md §5.1).
const (
	exitOK          = 0
	exitItemsFailed = 1
	exitUsage       = 2
	exitFatal       = 3
)

// exitError carries the exit code of a failed command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func fatal(err error) error { return &exitError{code: exitFatal, err: err} }

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "gtc:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFatal
}

const usage = `usage: gtc <command> [flags]

Commands:
  serve     run the HTTP API server (flags: --print-config)
  seed      fill the store with generated demo items (flags: --items N --datasets D --seed S --if-empty)
  version   print the version

Settings come from GTC_* environment variables; see README.md.
`

// run is the whole program: it takes its environment as arguments so tests can drive it.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return usageError("no command given")
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, stdout, stderr)
	case "seed":
		return runSeed(ctx, rest, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, version)
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return usageError("unknown command %q", cmd)
	}
}
