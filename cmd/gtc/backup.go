package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

const backupUsage = `usage: gtc backup --out FILE [--force] [--json]

Writes a consistent copy of the SQLite item store to FILE with SQLite's online backup API.
It runs beside a serving gtc on the same database: reads and writes go on while it copies,
and the copy is the database as it was when the backup started. FILE is written under a
temporary name beside it, checked with PRAGMA integrity_check and only then renamed, so a
failed or interrupted backup leaves no FILE. To restore, stop the server, copy FILE to the
database path ($GTC_SQLITE_PATH, default $GTC_DATA_DIR/gtc.db), delete any gtc.db-wal and
gtc.db-shm beside it, and start again.

Exit codes: 0 done, 2 bad flags or an --out that cannot be used (the live database, a
directory, an existing file without --force), 3 anything else (a Cosmos DB backend, a disk
error, a copy that failed its check).

Flags:
`

// backupSummary is the --json output of gtc backup.
type backupSummary struct {
	Command    string `json:"command"`
	File       string `json:"file"`
	Bytes      int64  `json:"bytes"`
	Pages      int    `json:"pages"`
	PageSize   int    `json:"pageSize"`
	DurationMS int64  `json:"durationMs"`
}

// runBackup is `gtc backup`: an online copy of the SQLite store.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, backupUsage)
		fs.PrintDefaults()
	}
	out := fs.String("out", "", "write the copy to this file (required)")
	force := fs.Bool("force", false, "replace FILE if it exists")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError("backup: %v", err)
	}
	switch {
	case fs.NArg() > 0:
		return usageError("backup: unexpected argument %q", fs.Arg(0))
	case *out == "":
		return usageError("backup: --out FILE is required")
	case *out == "-":
		return usageError("backup: --out -: the copy must be a file (SQLite writes it in place)")
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if cfg.RepoBackend == cosmos.Backend {
		return fatal(errors.New("backup: gtc backup copies the embedded SQLite store; back up Cosmos DB with its continuous backup"))
	}
	if cfg.SQLitePath() == sqlite.MemoryPath {
		return fatal(errors.New("backup: GTC_SQLITE_PATH=:memory: is a throw-away database of each process; there is no file to back up"))
	}
	a, err := newApp(ctx, cfg, newLogger(cfg, stderr), true)
	if err != nil {
		return err
	}
	defer func() { _ = a.Close() }()
	st := sqliteStoreOf(a.store)
	if st == nil {
		return fatal(fmt.Errorf("backup: the item store (%s) is not the SQLite store", a.store.Backend()))
	}
	res, err := st.Backup(ctx, *out, sqlite.BackupOptions{Force: *force})
	if err != nil {
		switch {
		case ctx.Err() != nil:
			fmt.Fprintln(stderr, "gtc: backup: stopped; no file was written")
			return errInterrupted
		case errors.Is(err, sqlite.ErrBackupExists):
			return usageError("%w (add --force to replace it)", err)
		case errors.Is(err, gtc.ErrInvalidArgument):
			return usageError("%w", err)
		}
		return fatal(err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(backupSummary{Command: "backup", File: res.Path, Bytes: res.Bytes, Pages: res.Pages,
			PageSize: res.PageSize, DurationMS: res.Duration.Milliseconds()})
	}
	fmt.Fprintf(stdout, "backup: wrote %s (%s, %d pages of %d bytes) in %d ms\n",
		res.Path, byteSize(res.Bytes), res.Pages, res.PageSize, res.Duration.Milliseconds())
	return nil
}

// sqliteStoreOf returns the SQLite store under st, looking through decorators that offer
// Unwrap (the instrumenting one of storage/observed), or nil when there is none.
func sqliteStoreOf(st gtc.Store) *sqlite.Store {
	for st != nil {
		if s, ok := st.(*sqlite.Store); ok {
			return s
		}
		u, ok := st.(interface{ Unwrap() gtc.Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
	return nil
}

// byteSize writes n in the largest binary unit that keeps it at one or more.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
