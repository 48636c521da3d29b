package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// CheckFile runs PRAGMA integrity_check on the database file at path, opened read-only, and
// returns SQLite's answer: "ok" when the file is sound, else one line per problem. It is
// safe beside a running server (WAL readers do not block the writer).
func CheckFile(ctx context.Context, path string) (string, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return "", fmt.Errorf("sqlite: open %s read-only: %w", path, err)
	}
	defer db.Close()
	return integrityCheck(ctx, db)
}

func integrityCheck(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return "", fmt.Errorf("sqlite: integrity_check: %w", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", fmt.Errorf("sqlite: integrity_check: %w", err)
		}
		lines = append(lines, line)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("sqlite: integrity_check: %w", err)
	}
	return strings.Join(lines, "\n"), nil
}
