package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// revisionStore implements gtc.RevisionStore over item_revisions. The writes that record
// revisions are the item writes themselves (items.go).
type revisionStore struct{ s *Store }

var _ gtc.RevisionStore = revisionStore{}

// Revisions returns the store of the items' revisions.
func (s *Store) Revisions() gtc.RevisionStore { return revisionStore{s} }

// List returns the item's revisions newest first. The cursor is the number of the last
// revision of the page before.
func (r revisionStore) List(ctx context.Context, datasetName, id, cursor string, limit int) (gtc.RevisionPage, error) {
	if r.s.closed.Load() {
		return gtc.RevisionPage{}, errClosed("list revisions")
	}
	before := int64(math.MaxInt64)
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 1 {
			return gtc.RevisionPage{}, fmt.Errorf("sqlite: list revisions: %w: invalid cursor", gtc.ErrInvalidArgument)
		}
		before = n
	}
	rows, err := r.s.stmts.revisionList.QueryContext(ctx, datasetName, id, before, limit+1)
	if err != nil {
		return gtc.RevisionPage{}, wrapErr("list revisions", err)
	}
	defer rows.Close()
	var page gtc.RevisionPage
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return gtc.RevisionPage{}, wrapErr("list revisions", err)
		}
		if len(page.Revisions) == limit {
			page.Next = strconv.FormatInt(page.Revisions[limit-1].Number, 10)
			break
		}
		rev, err := codec.DecodeRevision(doc)
		if err != nil {
			return gtc.RevisionPage{}, fmt.Errorf("sqlite: %w: %w", gtc.ErrUnavailable, err)
		}
		page.Revisions = append(page.Revisions, rev)
	}
	if err := rows.Err(); err != nil {
		return gtc.RevisionPage{}, wrapErr("list revisions", err)
	}
	return page, nil
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
