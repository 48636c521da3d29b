package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// revisionStore implements gtc.RevisionStore over item_revisions. The writes that record
// revisions are the item writes themselves (items.go).
type revisionStore struct{ s *Store }

var _ gtc.RevisionStore = revisionStore{}

// Revisions returns the store of the items' revisions.
func (s *Store) Revisions() gtc.RevisionStore { return revisionStore{s} }

// List returns the item's revisions newest first. The cursor names the last revision of
// the page before: its number, a dot and its rowid. The next page walks on from that rowid,
// so reading a long history page by page costs each page its own length; a cursor whose
// revision is no longer there (pruned since), or that has the number alone, walks from the
// newest revision down to the number.
func (r revisionStore) List(ctx context.Context, datasetName, id, cursor string, limit int) (gtc.RevisionPage, error) {
	if r.s.closed.Load() {
		return gtc.RevisionPage{}, errClosed("list revisions")
	}
	before, after := int64(math.MaxInt64), int64(0)
	if cursor != "" {
		num, rid, hasRID := strings.Cut(cursor, ".")
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 1 {
			return gtc.RevisionPage{}, fmt.Errorf("sqlite: list revisions: %w: invalid cursor", gtc.ErrInvalidArgument)
		}
		before = n
		if hasRID {
			if after, err = strconv.ParseInt(rid, 10, 64); err != nil || after < 1 {
				return gtc.RevisionPage{}, fmt.Errorf("sqlite: list revisions: %w: invalid cursor", gtc.ErrInvalidArgument)
			}
		}
	}
	if after != 0 {
		rows, err := r.s.stmts.revisionListAfter.QueryContext(ctx, datasetName, id, after, before, limit+1)
		if err != nil {
			return gtc.RevisionPage{}, wrapErr("list revisions", err)
		}
		page, found, err := revisionPage(rows, limit, true)
		if err != nil || found {
			return page, err
		}
	}
	rows, err := r.s.stmts.revisionList.QueryContext(ctx, datasetName, id, before, limit+1)
	if err != nil {
		return gtc.RevisionPage{}, wrapErr("list revisions", err)
	}
	page, _, err := revisionPage(rows, limit, false)
	return page, err
}

// revisionPage reads a page of at most limit revisions from rows of (rowid, document), one
// more telling that a next page exists. With anchored, the first row is the cursor's own
// revision, which the page leaves out; found reports whether it was there.
func revisionPage(rows *sql.Rows, limit int, anchored bool) (page gtc.RevisionPage, found bool, err error) {
	defer rows.Close()
	var last int64
	for rows.Next() {
		var rid int64
		var doc []byte
		if err := rows.Scan(&rid, &doc); err != nil {
			return gtc.RevisionPage{}, false, wrapErr("list revisions", err)
		}
		if anchored && !found {
			found = true
			continue
		}
		if len(page.Revisions) == limit {
			page.Next = strconv.FormatInt(page.Revisions[limit-1].Number, 10) + "." + strconv.FormatInt(last, 10)
			break
		}
		rev, err := codec.DecodeRevision(doc)
		if err != nil {
			return gtc.RevisionPage{}, false, fmt.Errorf("sqlite: %w: %w", gtc.ErrUnavailable, err)
		}
		page.Revisions = append(page.Revisions, rev)
		last = rid
	}
	if err := rows.Err(); err != nil {
		return gtc.RevisionPage{}, false, wrapErr("list revisions", err)
	}
	return page, found || !anchored, nil
}

// Get returns revision n of the item.
func (r revisionStore) Get(ctx context.Context, datasetName, id string, n int64) (*gtc.Revision, error) {
	if r.s.closed.Load() {
		return nil, errClosed("get revision")
	}
	var doc []byte
	err := r.s.stmts.revisionGet.QueryRowContext(ctx, datasetName, id, n).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: revision %d of %s/%s: %w", n, datasetName, id, gtc.ErrNotFound)
	}
	if err != nil {
		return nil, wrapErr("get revision", err)
	}
	rev, err := codec.DecodeRevision(doc)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w: %w", gtc.ErrUnavailable, err)
	}
	return rev, nil
}
