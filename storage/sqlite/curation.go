package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// curationStore implements gtc.CurationStore.
type curationStore struct {
	s *Store
}

var _ gtc.CurationStore = (*curationStore)(nil)

func encodeCuration(c *gtc.CurationInstructions) string { return string(codec.CurationStoredJSON(c)) }

func decodeCuration(doc []byte, etag string) (*gtc.CurationInstructions, error) {
	c, err := codec.DecodeStoredCuration(doc, etag)
	if err != nil {
		return nil, fmt.Errorf("sqlite: stored curation document unreadable: %w: %w", gtc.ErrUnavailable, err)
	}
	return c, nil
}

// Get returns the dataset's curation instructions.
func (cs *curationStore) Get(ctx context.Context, datasetName string) (*gtc.CurationInstructions, error) {
	if cs.s.closed.Load() {
		return nil, errClosed("get curation")
	}
	var etag string
	var doc []byte
	err := cs.s.stmts.curationGet.QueryRowContext(ctx, datasetName).Scan(&etag, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: get curation %s: %w", datasetName, gtc.ErrNotFound)
	}
	if err != nil {
		return nil, wrapErr("get curation", err)
	}
	return decodeCuration(doc, etag)
}

// Put creates the document (ifMatch == "") or replaces it if its ETag is exactly ifMatch.
func (cs *curationStore) Put(ctx context.Context, c *gtc.CurationInstructions, ifMatch string) (*gtc.CurationInstructions, bool, error) {
	if c == nil || c.DatasetName == "" {
		return nil, false, fmt.Errorf("sqlite: put curation: %w: a dataset name is required", gtc.ErrInvalidArgument)
	}
	doc := encodeCuration(c)
	stored, err := decodeCuration([]byte(doc), cs.s.newETag())
	if err != nil {
		return nil, false, err
	}
	st := &cs.s.stmts
	ds := c.DatasetName
	err = cs.s.write(ctx, "put curation", func(w *wtx) error {
		if ifMatch == "" {
			var etag string
			err := w.stmt(st.curationETag).QueryRow(ds).Scan(&etag)
			if err == nil {
				return fmt.Errorf("sqlite: put curation %s: %w", ds, gtc.ErrConflict)
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return wrapErr("put curation", err)
			}
			if _, err := w.stmt(st.curationInsert).Exec(ds, stored.ETag, doc); err != nil {
				return wrapErr("put curation", err)
			}
			return nil
		}
		res, err := w.stmt(st.curationUpdate).Exec(stored.ETag, doc, ds, ifMatch)
		if err != nil {
			return wrapErr("put curation", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return wrapErr("put curation", err)
		}
		if n == 1 {
			return nil
		}
		var etag string
		err = w.stmt(st.curationETag).QueryRow(ds).Scan(&etag)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: put curation %s: %w", ds, gtc.ErrNotFound)
		}
		if err != nil {
			return wrapErr("put curation", err)
		}
		return fmt.Errorf("sqlite: put curation %s: %w", ds, gtc.ErrPreconditionFailed)
	})
	if err != nil {
		return nil, false, err
	}
	return stored, ifMatch == "", nil
}
