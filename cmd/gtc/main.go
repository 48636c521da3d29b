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
	// The first SIGINT or SIGTERM cancels the context: the server drains, a long command
	// finishes the batch in flight and prints its summary. A second signal exits at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		sig := <-sigs
		cancel(signalCause{sig})
		sig = <-sigs
		os.Exit(signalExitCode(sig))
	}()
	err := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	if errors.Is(err, errInterrupted) {
		var sc signalCause
		if errors.As(context.Cause(ctx), &sc) {
			err = &exitError{code: signalExitCode(sc.sig), err: err}
		}
	}
	os.Exit(exitCode(err, os.Stderr))
}

// signalCause records which signal stopped the program.
type signalCause struct{ sig os.Signal }

func (s signalCause) Error() string { return "interrupted by " + s.sig.String() }

func signalExitCode(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return 143
	}
	return 130
}

// errInterrupted is returned by a command that stopped early on a signal.
var errInterrupted = errors.New("interrupted; the summary above shows how far it got")

// Exit codes shared by every command.
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
  recompute-tags
            refresh the stored computed tags (flags: --dataset D --status S --dry-run --json --progress MODE --report FILE)
  migrate   bring every stored document to the current format (gtc migrate --help)
  import    import items from JSON or JSONL files or stdin (gtc import --help)
  export    export items to a file, stdout or export storage; list, show, get and prune stored
            snapshots (gtc export help)
  release   make, list, show, download, delete and compare releases: named, immutable
            snapshots of a selection of items (gtc release help)
  backup    write an online copy of the SQLite store to a file (gtc backup --help)
  history   print an item's revisions, or the changes between two
            (gtc history DATASET ID [--diff R1..R2] [--limit N])
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
	case "recompute-tags":
		return runRecompute(ctx, rest, stdout, stderr)
	case "export":
		return runExport(ctx, rest, stdout, stderr)
	case "import":
		return runImport(ctx, rest, stdin, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, stdin, stdout, stderr)
	case "release":
		return runRelease(ctx, rest, stdout, stderr)
	case "backup":
		return runBackup(ctx, rest, stdout, stderr)
	case "history":
		return runHistory(ctx, rest, stdout, stderr)
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
