package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// The engine suite (make bench-engine) measures how far each bulk path of gtc is from the
// bare SQLite engine doing the same rows. Every run starts from a copy of the same prepared
// store. A write path runs through gtc first (the CLI command, or requests to a server);
// the rows it changed (items, their tag rows, the revisions it recorded, raw documents it
// removed, audit rows) are then read out of the two files, and the engine side writes
// exactly those rows into another copy of the start store through database/sql and
// modernc.org/sqlite: the same schema, indexes and triggers (it is a copy), the same
// pragmas and durability (sqlite.WriterDSN), and as many writes per transaction as gtc
// puts in one. It does none of gtc's work: no JSON, no validation, no tag rules, no
// conditional reads. A read path reads the same rows with the SQL gtc's scan uses. The
// rounds alternate which side runs first; the suite prints every round, then the medians,
// their spread and the ratio gtc/engine.

// enginePath is one bulk path.
type enginePath struct {
	name string
	unit string // what a rate counts
	// batch is how many writes gtc puts in one transaction on this path, and so the
	// engine side.
	batch int
	// start turns a copy of the seeded store into the path's start; nil keeps it.
	start func(ctx context.Context, dir string) error
	// gtc runs the path through gtc on dir and returns how many units it did.
	gtc func(ctx context.Context, dir string) (int, time.Duration, error)
	// read, for a read path, reads the same rows with the engine.
	read func(db *sql.DB) (int, error)
}

// engineRound is one round of one path.
type engineRound struct{ gtc, engine float64 }

func engineSuite(ctx context.Context, o options, dir string, out io.Writer) error {
	if o.rounds < 1 {
		return fmt.Errorf("--rounds %d: must be at least 1", o.rounds)
	}
	seedDir := filepath.Join(dir, "seed")
	t0 := time.Now()
	if err := seedStore(ctx, o.gtc, seedDir, o.items, o.datasets); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-44s %s\n", fmt.Sprintf("seed %d items (or reuse)", o.items), time.Since(t0).Round(time.Millisecond))
	importFile := filepath.Join(dir, "import.jsonl")
	if err := writeImportFile(filepath.Join(seedDir, "gtc.db"), importFile, o.engineImport); err != nil {
		return fmt.Errorf("import file: %w", err)
	}
	paths := enginePaths(o, importFile, out)
	fmt.Fprintf(out, "%d rounds per path, the side that runs first alternating; every run on a fresh copy of the path's start store\n\n", o.rounds)
	type summary struct {
		p      enginePath
		rounds []engineRound
	}
	var all []summary
	for _, p := range paths {
		if o.enginePaths != "" && !strings.Contains(","+o.enginePaths+",", ","+p.name+",") {
			continue
		}
		startDir := filepath.Join(dir, "start-"+p.name)
		if err := os.RemoveAll(startDir); err != nil {
			return err
		}
		if p.name == "migrate" {
			// Its start is a store of legacy documents, not the seeded items.
			if err := p.start(ctx, startDir); err != nil {
				return fmt.Errorf("%s: start: %w", p.name, err)
			}
		} else {
			if err := copyStore(seedDir, startDir); err != nil {
				return err
			}
			if p.start != nil {
				if err := p.start(ctx, startDir); err != nil {
					return fmt.Errorf("%s: start: %w", p.name, err)
				}
			}
		}
		var writes []engineWrite
		var rounds []engineRound
		for r := 0; r < o.rounds; r++ {
			var res engineRound
			gtcSide := func() error {
				run := filepath.Join(dir, "run-"+p.name)
				if err := copyStore(startDir, run); err != nil {
					return err
				}
				n, took, err := p.gtc(ctx, run)
				if err != nil {
					return fmt.Errorf("gtc: %w", err)
				}
				res.gtc = float64(n) / took.Seconds()
				if p.read == nil && writes == nil {
					if writes, err = diffWrites(filepath.Join(startDir, "gtc.db"), filepath.Join(run, "gtc.db")); err != nil {
						return fmt.Errorf("the rows gtc wrote: %w", err)
					}
					if len(writes) == 0 {
						return errors.New("gtc changed no row")
					}
				}
				return nil
			}
			engineSide := func() error {
				run := filepath.Join(dir, "engine-"+p.name)
				if err := copyStore(startDir, run); err != nil {
					return err
				}
				db, err := sql.Open("sqlite", sqlite.WriterDSN(filepath.Join(run, "gtc.db"), "FULL"))
				if err != nil {
					return err
				}
				defer db.Close()
				db.SetMaxOpenConns(1)
				start := time.Now()
				var n int
				if p.read != nil {
					n, err = p.read(db)
				} else {
					n, err = replayWrites(db, writes, p.batch)
				}
				took := time.Since(start)
				if err != nil {
					return fmt.Errorf("engine: %w", err)
				}
				res.engine = float64(n) / took.Seconds()
				return nil
			}
			order := []func() error{gtcSide, engineSide}
			if r%2 == 1 {
				order[0], order[1] = engineSide, gtcSide
			}
			for _, f := range order {
				if err := f(); err != nil {
					return fmt.Errorf("%s, round %d: %w", p.name, r+1, err)
				}
			}
			rounds = append(rounds, res)
			fmt.Fprintf(out, "%-26s round %d  gtc %8.0f %s  engine %8.0f  ratio %.2f\n", p.name, r+1, res.gtc, p.unit, res.engine, res.gtc/res.engine)
		}
		all = append(all, summary{p, rounds})
	}
	fmt.Fprintf(out, "\n%-26s %-26s %-26s %s\n", "path (100,000-item store)", "gtc, median (spread)", "engine, median (spread)", "ratio gtc/engine: median (per round)")
	for _, s := range all {
		var g, e, ratio []float64
		for _, r := range s.rounds {
			g, e, ratio = append(g, r.gtc), append(e, r.engine), append(ratio, r.gtc/r.engine)
		}
		per := make([]string, len(ratio))
		for i, v := range ratio {
			per[i] = strconv.FormatFloat(v, 'f', 2, 64)
		}
		fmt.Fprintf(out, "%-26s %8.0f %-8s (%s)  %8.0f (%s)  %.2f (%s)\n", s.p.name,
			medianFloat(g), s.p.unit, fmtSpread(spreadFloat(g), len(g)), medianFloat(e), fmtSpread(spreadFloat(e), len(e)),
			medianFloat(ratio), strings.Join(per, " "))
	}
	return nil
}

// enginePaths are the bulk paths, in the order they run.
func enginePaths(o options, importFile string, out io.Writer) []enginePath {
	importRun := func(extra ...string) func(ctx context.Context, dir string) (int, time.Duration, error) {
		return func(ctx context.Context, dir string) (int, time.Duration, error) {
			var sum struct {
				Imported int `json:"imported"`
				Failed   int `json:"failed"`
			}
			took, err := runCLI(ctx, o.gtc, dir, extra, &sum, "import", "--progress", "none", "--json", importFile)
			if err == nil && (sum.Failed > 0 || sum.Imported == 0) {
				err = fmt.Errorf("imported %d, failed %d", sum.Imported, sum.Failed)
			}
			return sum.Imported, took, err
		}
	}
	return []enginePath{
		// gtc import hands each batch of 100 to the store as one write (CreateEach).
		{name: "import", unit: "items/s", batch: 100, gtc: importRun()},
		{name: "import-checks-off", unit: "items/s", batch: 100,
			gtc: importRun("GTC_PII_DETECTION_ENABLED=false", "GTC_DUPLICATE_DETECTION_ENABLED=false")},
		{name: "put-16-clients", unit: "writes/s", batch: 16, gtc: func(ctx context.Context, dir string) (int, time.Duration, error) {
			return putRun(ctx, o, dir, out)
		}},
		{name: "jsonl-export-stream", unit: "items/s", gtc: func(ctx context.Context, dir string) (int, time.Duration, error) {
			return exportStreamRun(ctx, o, dir)
		}, read: readApproved},
		// recompute-tags writes a page with 64 workers, so up to 64 writes share a commit.
		{name: "recompute-all-new", unit: "items/s", batch: 64, start: clearComputedTags,
			gtc: func(ctx context.Context, dir string) (int, time.Duration, error) {
				var sum struct {
					Updated int   `json:"updated"`
					Errors  []any `json:"errors"`
				}
				took, err := runCLI(ctx, o.gtc, dir, nil, &sum, "recompute-tags", "--progress", "none", "--json")
				if err == nil && (len(sum.Errors) > 0 || sum.Updated == 0) {
					err = fmt.Errorf("updated %d, %d errors", sum.Updated, len(sum.Errors))
				}
				return sum.Updated, took, err
			}},
		// gtc migrate hands each batch of 100 to the SQLite writer at once.
		{name: "migrate", unit: "docs/s", batch: 100, start: func(ctx context.Context, dir string) error {
			return legacyStore(ctx, dir, o.items, o.datasets)
		}, gtc: func(ctx context.Context, dir string) (int, time.Duration, error) {
			var sum struct {
				Migrated int `json:"migrated"`
				Failed   int `json:"failed"`
			}
			took, err := runCLI(ctx, o.gtc, dir, nil, &sum, "migrate", "--progress", "none", "--json")
			if err == nil && (sum.Failed > 0 || sum.Migrated == 0) {
				err = fmt.Errorf("migrated %d, failed %d", sum.Migrated, sum.Failed)
			}
			return sum.Migrated, took, err
		}},
		// An execution writes 16 items at a time.
		{name: "agent-execution", unit: "items/s", batch: 16, gtc: func(ctx context.Context, dir string) (int, time.Duration, error) {
			return agentRun(ctx, o, dir)
		}},
	}
}

// runCLI runs one gtc command on dir with --json, decodes its summary into sum, and returns
// the command's wall time.
func runCLI(ctx context.Context, bin, dir string, env []string, sum any, args ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = loadkit.Env(dir, append([]string{"GTC_LOG_LEVEL=warn"}, env...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return took, fmt.Errorf("gtc %s: %w: %.2000s", args[0], err, stderr.String())
	}
	if err := json.Unmarshal([]byte(stdout.String()), sum); err != nil {
		return took, fmt.Errorf("gtc %s: its --json summary: %w: %.500s", args[0], err, stdout.String())
	}
	return took, nil
}

// putRun is the PUT phase of the API suite on a server started on dir: o.writers clients
// writing drafts for o.instrWriteTime. It prints how many writes shared each commit.
func putRun(ctx context.Context, o options, dir string, out io.Writer) (int, time.Duration, error) {
	srv, err := loadkit.StartServer(ctx, o.gtc, dir)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 128, time.Minute)}
	_, keys, err := c.writeKeys(o)
	if err != nil {
		return 0, 0, err
	}
	c0, w0, counted := c.commits()
	start := time.Now()
	rate, _, errs, err := c.writePhase(keys, o.writers, o.instrWriteTime)
	took := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	if errs > 0 {
		return 0, 0, fmt.Errorf("%d PUTs failed (see %s)", errs, srv.LogPath)
	}
	if c1, w1, ok := c.commits(); counted && ok && c1 > c0 {
		fmt.Fprintf(out, "%-26s gtc: %.1f writes per commit (fsync)\n", "put-16-clients", (w1-w0)/(c1-c0))
	}
	if err := srv.Stop(); err != nil {
		return 0, 0, fmt.Errorf("stop: %w (see %s)", err, srv.LogPath)
	}
	return int(rate * took.Seconds()), took, nil
}

// exportStreamRun streams every approved item as jsonl from a server started on dir.
func exportStreamRun(ctx context.Context, o options, dir string) (int, time.Duration, error) {
	srv, err := loadkit.StartServer(ctx, o.gtc, dir)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 4, 30*time.Minute)}
	r, err := c.streamExport(srv, `{"format":"jsonl","delivery":{"mode":"stream"}}`)
	if err != nil {
		return 0, 0, fmt.Errorf("export: %w (see %s)", err, srv.LogPath)
	}
	return r.items, r.took, nil
}

// readApproved is the engine side of the export stream: every approved item's document, in
// pages of 1,000 by (dataset_name, id), with the SQL of the store's scan.
func readApproved(db *sql.DB) (int, error) {
	const q = "SELECT pk, dataset_name, id, etag, doc FROM items WHERE status IN (?) AND (dataset_name, id) > (?, ?) ORDER BY dataset_name, id LIMIT ?"
	st, err := db.Prepare(q)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	n, lastD, lastI, bytes := 0, "", "", 0
	for {
		rows, err := st.Query("approved", lastD, lastI, 1001)
		if err != nil {
			return n, err
		}
		page := 0
		for rows.Next() {
			var pk int64
			var etag string
			var doc sql.RawBytes
			if page == 1000 {
				break
			}
			if err := rows.Scan(&pk, &lastD, &lastI, &etag, &doc); err != nil {
				rows.Close()
				return n, err
			}
			bytes += len(doc)
			page++
		}
		if err := rows.Close(); err != nil {
			return n, err
		}
		n += page
		if page < 1000 {
			return n, nil
		}
	}
}

// agentRun previews and executes one agent merge of a tag about a sixth of the items carry,
// on a server started on dir with the agent's write limit lifted, and times the execution
// until the operation has finished.
func agentRun(ctx context.Context, o options, dir string) (int, time.Duration, error) {
	srv, err := loadkit.StartServer(ctx, o.gtc, dir, "GTC_AGENT_WRITES_PER_SECOND=1000000", "GTC_AGENT_MAX_ITEMS=100000",
		"GTC_AGENT_PREVIEW_CACHE_ITEMS=1000000")
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = srv.Stop() }()
	c := &client{loadkit.NewClient(srv.Base, 4, 30*time.Minute)}
	args := map[string]any{"operation": "merge_tags", "tag_from": "topic:install", "tag_to": "topic:setup"}
	call := func(tool string, args map[string]any, into any) error {
		body, _ := json.Marshal(args)
		res, data, err := c.Do("POST", "/v1/agent/tools/"+tool, body, map[string]string{"X-User-Id": "bench-agent@example.com"})
		if err != nil {
			return err
		}
		var tr struct {
			IsError bool            `json:"isError"`
			Content string          `json:"content"`
			Data    json.RawMessage `json:"data"`
		}
		if res.StatusCode != 200 || json.Unmarshal(data, &tr) != nil || tr.IsError {
			return fmt.Errorf("%s: %d %.500s", tool, res.StatusCode, data)
		}
		return json.Unmarshal(tr.Data, into)
	}
	var pv struct {
		WouldChange int `json:"wouldChange"`
	}
	if err := call("manage_tags", args, &pv); err != nil {
		return 0, 0, err
	}
	if pv.WouldChange == 0 {
		return 0, 0, errors.New("the preview found nothing to change")
	}
	exec := map[string]any{"dry_run": false}
	for k, v := range args {
		exec[k] = v
	}
	start := time.Now()
	var ex struct {
		OperationID string `json:"operationId"`
	}
	if err := call("manage_tags", exec, &ex); err != nil {
		return 0, 0, err
	}
	for {
		var got struct {
			Operation struct {
				Status string                `json:"status"`
				Counts gtc.AgentOpCounts     `json:"counts"`
				Items  []struct{ ID string } `json:"items"`
			} `json:"operation"`
		}
		if err := call("list_tag_operations", map[string]any{"operation_id": ex.OperationID}, &got); err != nil {
			return 0, 0, err
		}
		if got.Operation.Status != "running" {
			took := time.Since(start)
			if got.Operation.Counts.Applied == 0 {
				return 0, 0, fmt.Errorf("the operation ended %s having applied nothing", got.Operation.Status)
			}
			return got.Operation.Counts.Applied, took, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clearComputedTags makes every item's computed tags new to the recompute: it empties each
// stored document's computedTags and removes those tags' rows from the tag index (the
// triggers keep the counts), keeping a tag an item also carries as a manual tag.
func clearComputedTags(_ context.Context, dir string) error {
	db, err := sql.Open("sqlite", sqlite.WriterDSN(filepath.Join(dir, "gtc.db"), "NORMAL"))
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{
		`DELETE FROM item_tags WHERE EXISTS (
		   SELECT 1 FROM items i, json_each(i.doc, '$.computedTags') c
		   WHERE i.pk = item_tags.item_pk AND c.value = item_tags.tag
		     AND NOT EXISTS (SELECT 1 FROM json_each(i.doc, '$.manualTags') m WHERE m.value = c.value))`,
		`UPDATE items SET doc = json_set(doc, '$.computedTags', json('[]'))`,
		`PRAGMA wal_checkpoint(TRUNCATE)`,
	} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%.60s: %w", q, err)
		}
	}
	return nil
}

// legacyStore creates a store in dir holding n legacy (v1) documents and no items: half in
// a numeric bucket, so the migration moves them.
func legacyStore(ctx context.Context, dir string, n, datasets int) error {
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "gtc.db"), Synchronous: "NORMAL"})
	if err != nil {
		return err
	}
	words := strings.Fields("install upgrade license port proxy cluster backup restore token quota region driver kernel update rollback")
	text := func(r *rand.Rand, k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	tags := []string{"source:sme", "topic:install", "topic:security", "difficulty:hard", "legacy-flag"}
	for lo := 0; lo < n; lo += 1000 {
		docs := make([]map[string]any, 0, 1000)
		for j := lo; j < min(n, lo+1000); j++ {
			r := rand.New(rand.NewPCG(3, uint64(j)))
			ds, id := fmt.Sprintf("dataset-%d", j%datasets), fmt.Sprintf("legacy-%06d", j)
			var bucket any = gtc.DeriveBucket(ds, id)
			if j%2 == 0 {
				bucket = j % 16
			}
			refs := []any{}
			for i := range r.IntN(4) {
				refs = append(refs, map[string]any{"url": fmt.Sprintf("https://docs.example.com/%s/%d", words[r.IntN(len(words))], i),
					"title": text(r, 5), "content": text(r, 40), "bonus": false})
			}
			var tl []any
			for range 1 + r.IntN(3) {
				tl = append(tl, tags[r.IntN(len(tags))])
			}
			docs = append(docs, map[string]any{"id": id, "datasetName": ds, "bucket": bucket,
				"status":        []string{"draft", "approved", "skipped"}[r.IntN(3)],
				"synthQuestion": text(r, 25), "editedQuestion": nil, "answer": text(r, 60),
				"refs": refs, "totalReferences": len(refs), "tags": tl, "comment": text(r, 8),
				"updatedAt": gtc.FormatStoredTime(base.Add(-time.Duration(r.IntN(365*24*3600)) * time.Second))})
		}
		if err := s.InsertRawBatch(ctx, docs); err != nil {
			_ = s.Close()
			return err
		}
	}
	return s.Close()
}

// writeImportFile writes n items as JSON lines for gtc import: documents of the seeded store
// under new ids, a fifth approved and the rest drafts, every tenth draft repeating the
// question and answer of an approved item of the file (the duplicate check's work).
func writeImportFile(dbPath, path string, n int) error {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query("SELECT doc FROM items ORDER BY pk LIMIT ?", n)
	if err != nil {
		return err
	}
	defer rows.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var approved []map[string]any
	i := 0
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			f.Close()
			return err
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			f.Close()
			return err
		}
		for _, k := range []string{"etag", "_etag", "bucket", "assignedTo", "assignedAt", "reviewedAt", "updatedBy", "computedTags", "history_rev"} {
			delete(m, k)
		}
		m["id"] = fmt.Sprintf("imported-%06d", i)
		if i%5 == 0 {
			m["status"] = "approved"
			approved = append(approved, m)
		} else {
			m["status"] = "draft"
			if i%10 == 1 && len(approved) > 0 {
				a := approved[len(approved)-1]
				for _, k := range []string{"synthQuestion", "editedQuestion", "answer", "history", "datasetName"} {
					if v, ok := a[k]; ok {
						m[k] = v
					}
				}
			}
		}
		line, err := json.Marshal(m)
		if err != nil {
			f.Close()
			return err
		}
		w.Write(line)
		w.WriteByte('\n')
		i++
	}
	if err := rows.Err(); err != nil {
		f.Close()
		return err
	}
	if i < n {
		f.Close()
		return fmt.Errorf("the seeded store has %d items, fewer than the %d to import", i, n)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyStore copies the database of src (after its last checkpoint: gtc leaves no WAL behind
// when it closes) into a fresh dst.
func copyStore(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"gtc.db", "gtc.db-wal"} {
		in, err := os.Open(filepath.Join(src, name))
		if errors.Is(err, os.ErrNotExist) && name != "gtc.db" {
			continue
		}
		if err != nil {
			return err
		}
		out, err := os.OpenFile(filepath.Join(dst, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			in.Close()
			return err
		}
		_, err = io.Copy(out, in)
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
