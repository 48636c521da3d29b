package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	gtc "github.com/gtc-dev/gtc"
)

// migrations are the embedded schema migrations; migrations[i] takes the database from
// user_version i to i+1. Each runs in its own transaction together with the version bump.
var migrations = []func(ctx context.Context, tx *sql.Tx, env migrationEnv) error{
	migrateV1,
	schemaMigration(schemaV2),
	schemaMigration(schemaV3),
	schemaMigration(schemaV4),
	schemaMigration(schemaV5),
	schemaMigration(schemaV6),
	schemaMigration(schemaV7),
	schemaMigration(schemaV8),
	schemaMigration(schemaV9),
}

// schemaMigration is a migration that runs one schema script.
func schemaMigration(script string) func(ctx context.Context, tx *sql.Tx, env migrationEnv) error {
	return func(ctx context.Context, tx *sql.Tx, _ migrationEnv) error {
		_, err := tx.ExecContext(ctx, script)
		return err
	}
}

// SchemaVersion is the schema version this build writes and understands: the number of
// embedded migrations.
const SchemaVersion = 9

// migrationEnv is what a migration may draw on besides the transaction.
type migrationEnv struct {
	clock  gtc.Clock
	random io.Reader
}

// SchemaVersionError reports a database written by a newer gtc.
type SchemaVersionError struct {
	Found     int // PRAGMA user_version of the file
	Supported int // SchemaVersion of this build
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this gtc supports (%d)", e.Found, e.Supported)
}

const schemaV1 = `
CREATE TABLE items (
  pk            INTEGER PRIMARY KEY,
  id            TEXT NOT NULL,
  dataset_name  TEXT NOT NULL,
  bucket        TEXT NOT NULL,
  status        TEXT NOT NULL,
  assigned_to   TEXT,                      -- NULL when unassigned
  etag          TEXT NOT NULL,
  index_v       INTEGER NOT NULL,
  sk_reviewed   TEXT NOT NULL,
  sk_updated    TEXT NOT NULL,
  sk_has_answer TEXT NOT NULL,
  sk_tag_count  TEXT NOT NULL,
  sk_references TEXT NOT NULL,
  sk_assigned   TEXT NOT NULL,
  sk_recent     TEXT NOT NULL,
  -- The large columns come last, so every column a query filters or sorts on lies in the
  -- part of the row stored on its b-tree page, not in overflow pages.
  ref_urls      TEXT NOT NULL,
  search_text   TEXT NOT NULL,
  doc           TEXT NOT NULL,             -- canonical JSON
  UNIQUE (dataset_name, id)                -- item identity
);
CREATE INDEX items_status_dataset_id       ON items (status, dataset_name, id);
CREATE INDEX items_assigned                ON items (assigned_to, status, sk_assigned);
-- The self-serve pool (draft and unassigned, or skipped): covering, so sampling it never
-- reads the rows.
CREATE INDEX items_pool                    ON items (status, assigned_to, dataset_name);
CREATE INDEX items_status_reviewed         ON items (status, sk_reviewed);
CREATE INDEX items_dataset_status_reviewed ON items (dataset_name, status, sk_reviewed);
CREATE INDEX items_sk_reviewed             ON items (sk_reviewed);
CREATE INDEX items_sk_updated              ON items (sk_updated);
CREATE INDEX items_sk_has_answer           ON items (sk_has_answer);
CREATE INDEX items_sk_tag_count            ON items (sk_tag_count);
CREATE INDEX items_sk_references           ON items (sk_references);
CREATE INDEX items_dataset_recent          ON items (dataset_name, sk_recent);

-- The merged tags (manualTags ∪ computedTags) of each item, with copies of the item's
-- dataset_name and status: a tag filter combined with dataset and status filters is then
-- counted from one range of this table's primary key, without visiting the items.
CREATE TABLE item_tags (
  tag          TEXT NOT NULL,
  dataset_name TEXT NOT NULL,
  status       TEXT NOT NULL,
  item_pk      INTEGER NOT NULL REFERENCES items (pk) ON DELETE CASCADE,
  PRIMARY KEY (tag, dataset_name, status, item_pk)
) WITHOUT ROWID;
CREATE INDEX item_tags_item ON item_tags (item_pk, tag);

CREATE TABLE curation_instructions (
  dataset_name TEXT PRIMARY KEY,
  etag         TEXT NOT NULL,
  doc          TEXT NOT NULL
);

CREATE TABLE tag_store (tag TEXT PRIMARY KEY) WITHOUT ROWID;

CREATE TABLE tag_definitions (
  tag_key     TEXT PRIMARY KEY,
  description TEXT NOT NULL,
  created_by  TEXT,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  etag        TEXT NOT NULL
);

CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`

func migrateV1(ctx context.Context, tx *sql.Tx, env migrationEnv) error {
	if _, err := tx.ExecContext(ctx, schemaV1); err != nil {
		return err
	}
	var id [16]byte
	if _, err := io.ReadFull(env.random, id[:]); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx,
		`INSERT INTO meta (key, value) VALUES ('store_id', ?), ('created_at', ?), ('index_v', ?)`,
		hex.EncodeToString(id[:]), gtc.FormatStoredTime(env.clock.Now()), strconv.Itoa(gtc.IndexVersion))
	return err
}

// schemaV2 adds raw_items, for documents that are not in the current stored form (legacy v1
// documents loaded with InsertRaw). They cannot be items rows, which need a canonical bucket
// and the derived index fields; kept apart, no query, scan or count sees them until gtc
// migrate has turned them into items. Foreign data may hold one (dataset_name, id)
// more than once, so that index is not unique.
//
// Status counts the items whose derived columns are older than gtc.IndexVersion. The partial
// index answers that count without reading the table; it stays empty, and costs writes
// nothing, while every item is current. Its bound is gtc.IndexVersion at the time of this
// migration: the migration that accompanies a raise of IndexVersion must recreate it with
// the new bound (TestPendingCountUsesIndex fails until then).
const schemaV2 = `
CREATE TABLE raw_items (
  pk           INTEGER PRIMARY KEY,
  dataset_name TEXT NOT NULL,
  id           TEXT NOT NULL,
  bucket       TEXT NOT NULL,              -- the stored bucket as text, '' when absent or null
  etag         TEXT NOT NULL,
  doc          TEXT NOT NULL               -- the document exactly as it was inserted
);
CREATE INDEX raw_items_dataset_id ON raw_items (dataset_name, id);

CREATE INDEX items_index_behind ON items (index_v) WHERE index_v < 1;
`

// schemaV3 adds the agent audit log: one agent_operations row per
// operation header and one agent_operation_items row per item, keyed by (operation_id, seq).
// started_at is gtc.FormatStoredTime text: fixed width, so byte order is time order and the
// newest-first listing walks a descending index from its start. doc is the header's JSON;
// status and actor are copied out of it because List, Running and DeleteBefore select on
// them. The tags the arguments name live in agent_operation_tags with a copy of started_at,
// so a tag filter reads one index range already in listing order instead of parsing every
// header's JSON. Items and tags go with their header through ON DELETE CASCADE (the
// connections run with foreign_keys on), so retention deletes only headers. Running
// operations are few and looked up at every startup: a partial index holds exactly them.
const schemaV3 = `
CREATE TABLE agent_operations (
  operation_id TEXT PRIMARY KEY,
  started_at   TEXT NOT NULL,              -- gtc.FormatStoredTime
  status       TEXT NOT NULL,
  actor        TEXT NOT NULL,
  doc          TEXT NOT NULL               -- the header as JSON, times in the stored format
);
CREATE INDEX agent_operations_started ON agent_operations (started_at DESC, operation_id DESC);
CREATE INDEX agent_operations_actor   ON agent_operations (actor, started_at DESC, operation_id DESC);
CREATE INDEX agent_operations_running ON agent_operations (started_at DESC, operation_id DESC) WHERE status = 'running';

CREATE TABLE agent_operation_tags (
  tag          TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  operation_id TEXT NOT NULL REFERENCES agent_operations (operation_id) ON DELETE CASCADE,
  PRIMARY KEY (tag, started_at, operation_id)
) WITHOUT ROWID;
CREATE INDEX agent_operation_tags_operation ON agent_operation_tags (operation_id);

CREATE TABLE agent_operation_items (
  operation_id TEXT NOT NULL REFERENCES agent_operations (operation_id) ON DELETE CASCADE,
  seq          INTEGER NOT NULL,           -- position in the operation, from 0 without gaps
  doc          TEXT NOT NULL,              -- the gtc.AgentOpItem as JSON
  PRIMARY KEY (operation_id, seq)
);
`

// schemaV4 adds tag_counts, the number of item_tags rows of each (tag, dataset_name,
// status): how many items of that dataset and status carry the tag. Triggers on item_tags
// keep it exact in the transaction of every write, whatever the statement (the store's own
// inserts and deletes, the deletes ON DELETE CASCADE makes when items go, and an UPDATE,
// which the store never issues); a row whose count reaches 0 is deleted, so the table holds
// only tags some item carries. CountTags reads it instead of walking item_tags: a few
// thousand rows instead of one per tag of every item.
//
// The store never uses INSERT OR REPLACE on item_tags, whose conflict deletes fire no
// trigger while recursive_triggers is off: an item_tags write that conflicts fails instead.
//
// The trigger statements say OR FAIL. Neither can fail (their values come from NOT NULL
// columns of item_tags, and the one key conflict is the upsert's), but a statement with a
// trigger counts as writing several rows, and SQLite gives such a statement a statement
// journal when some check in it may ABORT: the pages it changes are copied into the
// in-memory sub-journal and it is truncated again at the end of the statement. With OR FAIL
// in the triggers a DELETE on item_tags has no such check and needs none, which saved about
// a quarter of what the triggers add to tag and status changes (BenchmarkTagCountWrites).
// An INSERT on item_tags keeps its statement journal: its own key and foreign key checks
// abort.
const schemaV4 = `
CREATE TABLE tag_counts (
  tag          TEXT NOT NULL,
  dataset_name TEXT NOT NULL,
  status       TEXT NOT NULL,
  n            INTEGER NOT NULL,           -- > 0
  PRIMARY KEY (tag, dataset_name, status)
) WITHOUT ROWID;

CREATE TRIGGER item_tags_count_insert AFTER INSERT ON item_tags BEGIN
  INSERT OR FAIL INTO tag_counts (tag, dataset_name, status, n) VALUES (NEW.tag, NEW.dataset_name, NEW.status, 1)
    ON CONFLICT (tag, dataset_name, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER item_tags_count_delete AFTER DELETE ON item_tags BEGIN
  UPDATE OR FAIL tag_counts SET n = n - 1
    WHERE tag = OLD.tag AND dataset_name = OLD.dataset_name AND status = OLD.status;
  DELETE FROM tag_counts
    WHERE tag = OLD.tag AND dataset_name = OLD.dataset_name AND status = OLD.status AND n <= 0;
END;

CREATE TRIGGER item_tags_count_update AFTER UPDATE OF tag, dataset_name, status ON item_tags BEGIN
  UPDATE OR FAIL tag_counts SET n = n - 1
    WHERE tag = OLD.tag AND dataset_name = OLD.dataset_name AND status = OLD.status;
  DELETE FROM tag_counts
    WHERE tag = OLD.tag AND dataset_name = OLD.dataset_name AND status = OLD.status AND n <= 0;
  INSERT OR FAIL INTO tag_counts (tag, dataset_name, status, n) VALUES (NEW.tag, NEW.dataset_name, NEW.status, 1)
    ON CONFLICT (tag, dataset_name, status) DO UPDATE SET n = n + 1;
END;

INSERT INTO tag_counts (tag, dataset_name, status, n)
  SELECT tag, dataset_name, status, count(*) FROM item_tags GROUP BY tag, dataset_name, status;
`

// schemaV5 keeps the revisions of items: one row per revision, written in the transaction of
// the item write that records it (codec.AppendRevision's JSON in doc).
const schemaV5 = `
CREATE TABLE item_revisions (
  rid          INTEGER PRIMARY KEY, -- rows are large and written in time order: appended
  dataset_name TEXT NOT NULL,
  id           TEXT NOT NULL,
  n            INTEGER NOT NULL,
  doc          TEXT NOT NULL
);
CREATE UNIQUE INDEX item_revisions_by_item ON item_revisions (dataset_name, id, n);
`

// schemaV6 links each item's revisions into a list instead of indexing them by item: the
// item row holds the rowid of its newest revision (rev_head) and each revision the rowid of
// the one before it (prev; NULL for the oldest kept). A revision insert then only appends to
// item_revisions, where the index put every write on a random page of its own. Reads walk
// the list from the head, newest first; numbers strictly decrease along it.
const schemaV6 = `
ALTER TABLE items ADD COLUMN rev_head INTEGER;
ALTER TABLE item_revisions ADD COLUMN prev INTEGER;
UPDATE item_revisions SET prev = (
  SELECT p.rid FROM item_revisions p
  WHERE p.dataset_name = item_revisions.dataset_name AND p.id = item_revisions.id AND p.n < item_revisions.n
  ORDER BY p.n DESC LIMIT 1);
UPDATE items SET rev_head = (
  SELECT r.rid FROM item_revisions r WHERE r.dataset_name = items.dataset_name AND r.id = items.id
  ORDER BY r.n DESC LIMIT 1)
WHERE EXISTS (SELECT 1 FROM item_revisions r WHERE r.dataset_name = items.dataset_name AND r.id = items.id);
DROP INDEX item_revisions_by_item;
`

// schemaV7 keeps the leases of gtc.LeaseStore; expires is in Unix microseconds.
const schemaV7 = `
CREATE TABLE leases (
  name    TEXT PRIMARY KEY,
  holder  TEXT NOT NULL,
  expires INTEGER NOT NULL,
  etag    TEXT NOT NULL
) WITHOUT ROWID;
`

// schemaV8 keeps the jobs of gtc.JobStore: the record's JSON, with the creation and finish
// times (stored format, sortable as text) as columns for the scan and retention.
const schemaV8 = `
CREATE TABLE jobs (
  id          TEXT PRIMARY KEY,
  created_at  TEXT NOT NULL,
  finished_at TEXT,
  doc         TEXT NOT NULL,
  etag        TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX jobs_unfinished ON jobs (created_at) WHERE finished_at IS NULL;
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
`

// schemaV9 keeps the agent previews of gtc.AgentPreviewStore: one row per (caller, hash),
// times in Unix microseconds, the encoded plan last so that the other columns stay on the
// row's b-tree page.
const schemaV9 = `
CREATE TABLE agent_previews (
  caller       TEXT NOT NULL,
  hash         TEXT NOT NULL,
  id           TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  state        TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  changes      INTEGER NOT NULL,
  etag         TEXT NOT NULL,
  plan         BLOB NOT NULL,
  PRIMARY KEY (caller, hash)
);
CREATE INDEX agent_previews_expires ON agent_previews (expires_at);
`

// migrate applies every embedded migration above the database's user_version, each in its
// own transaction, and refuses a database from a newer build.
func migrate(ctx context.Context, db *sql.DB, env migrationEnv, log *slog.Logger) error {
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return wrapErr("read schema version", err)
	}
	if version > SchemaVersion {
		return &SchemaVersionError{Found: version, Supported: SchemaVersion}
	}
	for v := version; v < SchemaVersion; v++ {
		tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE through _txlock
		if err != nil {
			return wrapErr("begin migration", err)
		}
		if err := migrations[v](ctx, tx, env); err != nil {
			_ = tx.Rollback()
			return wrapErr(fmt.Sprintf("migration to schema version %d", v+1), err)
		}
		// PRAGMA cannot take a bound parameter; v+1 is our own integer.
		if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(v+1)); err != nil {
			_ = tx.Rollback()
			return wrapErr("set schema version", err)
		}
		if err := tx.Commit(); err != nil {
			return wrapErr(fmt.Sprintf("commit migration to schema version %d", v+1), err)
		}
		log.Info("sqlite: applied schema migration", "version", v+1)
	}
	return nil
}
