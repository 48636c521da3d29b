package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gtc-dev/gtc"
)

// Releases live under ReleasesPrefix in export storage, one directory per name:
//
//	exports/releases/<name>/.reserved       taken when the name is claimed; never deleted once the release exists
//	exports/releases/<name>/<split>.<ext>   one data file per split and format
//	exports/releases/<name>/README.md       the dataset card
//	exports/releases/<name>/manifest.json   written last: a release is complete exactly when it exists
//	exports/releases/<name>/.deleted        the tombstone of a deleted release
const ReleasesPrefix = "exports/releases/"

const (
	cardName      = "README.md"
	tombstoneName = ".deleted"
	// maxSplits bounds the splits of one release, and maxNotes its notes (in characters).
	maxSplits = 16
	maxNotes  = 4000
	// maxTagFilters bounds each of a release's tag lists.
	maxTagFilters = 100
)

// ReleaseDir is the storage directory of the release called name.
func ReleaseDir(name string) string { return ReleasesPrefix + name }

// defaultReleaseFormats are the formats of a release that names none, those registered.
var defaultReleaseFormats = []string{"jsonl", "parquet"}

// ReleasePlan is a checked release request, ready to run.
type ReleasePlan struct {
	Name       string
	plan       *Plan
	formats    []Formatter
	splits     []gtc.Split // by name
	stratifyBy string
	notes      string
	selection  []member // the request's selection, as the manifest records it
}

// ResolveRelease checks a release request and reports every problem at once (422). Known
// tag groups come from TagGroups when the exporter has it.
func (x *Exporter) ResolveRelease(ctx context.Context, req *gtc.ReleaseRequest, actor string) (*ReleasePlan, error) {
	var probs []gtc.FieldError
	add := func(field, format string, args ...any) {
		probs = append(probs, gtc.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	rp := &ReleasePlan{Name: req.Name, notes: req.Notes, stratifyBy: req.StratifyBy}
	if !gtc.ValidReleaseName(req.Name) {
		add("name", "Release name %q must start with a letter or digit and have at most 100 letters, digits, '.', '_' or '-'", req.Name)
	} else if req.Name == CurrentRelease {
		add("name", "Release name %q is reserved: comparing with it compares with the items a release's selection holds now", req.Name)
	}
	if utf8.RuneCountInString(req.Notes) > maxNotes {
		add("notes", "Notes have at most %d characters", maxNotes)
	}

	plan := &Plan{Actor: actor, Mode: gtc.DeliveryArtifact}
	rp.plan = plan
	status := string(gtc.StatusApproved)
	if req.Status != nil {
		status = *req.Status
	}
	if status != "" {
		if st := gtc.Status(status); st.Valid() {
			plan.Statuses = []gtc.Status{st}
		} else {
			add("filters.status", "Invalid status value '%s'", status)
		}
	}
	if req.Datasets != nil {
		for i, d := range req.Datasets {
			if !isNotBlank(d) {
				add(fmt.Sprintf("datasets[%d]", i), "A dataset name must not be blank")
			}
		}
		plan.DatasetNames = slices.Compact(slices.Sorted(slices.Values(req.Datasets)))
		if len(plan.DatasetNames) == 0 {
			add("datasets", "List at least one dataset, or leave datasets out for every dataset")
		}
	}
	tags, exclude := uniqueSorted(req.Tags), uniqueSorted(req.ExcludeTags)
	for _, l := range []struct {
		field string
		tags  []string
	}{{"filters.tags", req.Tags}, {"filters.excludeTags", req.ExcludeTags}} {
		if len(l.tags) > maxTagFilters {
			add(l.field, "At most %d tags", maxTagFilters)
		}
		for i, t := range l.tags {
			if g, v, ok := strings.Cut(t, ":"); !ok || g == "" || v == "" {
				add(fmt.Sprintf("%s[%d]", l.field, i), "Tag %q is not of the form group:value", t)
			}
		}
	}
	for _, t := range tags {
		if _, both := slices.BinarySearch(exclude, t); both {
			add("filters.excludeTags", "Tag %q is both required and excluded", t)
		}
	}
	plan.Select = tagSelect(tags, exclude)

	rp.splits = slices.Clone(req.Splits)
	slices.SortFunc(rp.splits, func(a, b gtc.Split) int { return strings.Compare(a.Name, b.Name) })
	if len(rp.splits) > maxSplits {
		add("splits", "At most %d splits", maxSplits)
	}
	sum := 0.0
	for i, s := range rp.splits {
		field := "splits." + s.Name
		switch {
		case !gtc.ValidSplitName(s.Name):
			add(field, "Split name %q must start with a lower-case letter and have at most 32 lower-case letters, digits or '_'", s.Name)
		case i > 0 && rp.splits[i-1].Name == s.Name:
			add(field, "Split %q is named twice", s.Name)
		}
		if !(s.Ratio > 0 && s.Ratio <= 1) {
			add(field, "A split's ratio is above 0 and at most 1")
		}
		sum += s.Ratio
	}
	if len(rp.splits) > 0 && math.Abs(sum-1) > 1e-9 {
		add("splits", "The split ratios add up to %s; they must add up to 1", strconv.FormatFloat(sum, 'f', -1, 32))
	}
	if req.StratifyBy != "" {
		if len(rp.splits) < 2 {
			add("stratifyBy", "Stratifying needs at least two splits")
		}
		groups, err := x.tagGroups(ctx)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(groups, req.StratifyBy) {
			add("stratifyBy", "%q is not a tag group (known: %s)", req.StratifyBy, strings.Join(groups, ", "))
		}
	}
	if len(rp.splits) == 0 {
		rp.splits = []gtc.Split{{Name: gtc.AllSplit, Ratio: 1}}
	}

	formats := req.Formats
	if formats == nil {
		for _, f := range defaultReleaseFormats {
			if _, ok := x.formatters.Lookup(f); ok {
				formats = append(formats, f)
			}
		}
	}
	if len(formats) == 0 {
		add("formats", "List at least one format (known: %s)", strings.Join(x.formatters.Names(), ", "))
	}
	exts := map[string]string{}
	for i, name := range formats {
		field := fmt.Sprintf("formats[%d]", i)
		f, ok := x.formatters.Lookup(name)
		if !ok {
			add(field, "Unknown export format '%s' (known: %s)", name, strings.Join(x.formatters.Names(), ", "))
			continue
		}
		if other, taken := exts[f.Extension()]; taken {
			if other == name {
				add(field, "Format %q is listed twice", name)
			} else {
				add(field, "Formats %q and %q both write .%s files; list one of them", other, name, f.Extension())
			}
			continue
		}
		exts[f.Extension()] = name
		rp.formats = append(rp.formats, f)
	}
	chain, err := x.processors.Resolve(x.defaultChain)
	if err != nil {
		return nil, err // the default chain was checked when the exporter was made
	}
	plan.Processors = chain
	if len(probs) > 0 {
		return nil, gtc.ValidationError(probs)
	}

	var datasets any
	if plan.DatasetNames != nil {
		datasets = plan.DatasetNames
	}
	splits := map[string]float64{}
	for _, s := range rp.splits {
		splits[s.Name] = s.Ratio
	}
	var stratify any
	if rp.stratifyBy != "" {
		stratify = rp.stratifyBy
	}
	names := make([]string, len(rp.formats))
	for i, f := range rp.formats {
		names[i] = f.Name()
	}
	rp.selection = []member{
		{"datasets", datasets},
		{"status", status},
		{"tags", nonNil(tags)},
		{"excludeTags", nonNil(exclude)},
		{"splits", splits},
		{"stratifyBy", stratify},
		{"formats", names},
		{"processors", plan.ProcessorNames()},
	}
	return rp, nil
}

// tagSelect is the Select of a selection that requires every tag of tags and refuses every
// tag of exclude; nil when both are empty.
func tagSelect(tags, exclude []string) func(it *gtc.Item) bool {
	if len(tags) == 0 && len(exclude) == 0 {
		return nil
	}
	return func(it *gtc.Item) bool {
		have := it.Tags()
		for _, t := range tags {
			if !slices.Contains(have, t) {
				return false
			}
		}
		for _, t := range exclude {
			if slices.Contains(have, t) {
				return false
			}
		}
		return true
	}
}

func uniqueSorted(ss []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(ss)))
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// tagGroups lists the tag groups a release may be stratified by.
func (x *Exporter) tagGroups(ctx context.Context) ([]string, error) {
	if x.groups == nil {
		return nil, nil
	}
	groups, err := x.groups(ctx)
	if err != nil {
		return nil, fmt.Errorf("export: tag groups: %w", err)
	}
	return uniqueSorted(groups), nil
}

// ReleaseInfo is what creating a release made.
type ReleaseInfo struct {
	Name         string
	ManifestPath string
	Count        int // items
	Records      int // records in each format's files together
	ContentHash  string
}

// ReleaseItem is one item of a release's manifest.
type ReleaseItem struct {
	DatasetName string `json:"datasetName"`
	Bucket      string `json:"bucket"`
	ID          string `json:"id"`
	Revision    int64  `json:"revision"`
	SHA256      string `json:"sha256"`
	Split       string `json:"split"`
}

// releaseFile is a release's data file for one split and format.
type releaseFile struct {
	*dataFile
	raw     rawEncoder   // the encoder's fast path, when it has one
	compact *lineEncoder // set for the formats that write each record's compact JSON
}

// write writes one record, whose compact JSON is line, to the file.
func (f *releaseFile) write(rec Record, raw *rawRecord, line []byte) error {
	switch {
	case f.compact != nil:
		return f.compact.encodeCompact(line)
	case raw != nil:
		return f.raw.encodeRaw(raw)
	}
	return f.enc.Encode(rec)
}

// CreateRelease writes the release: it claims the name, writes each split's data files in
// every format, the dataset card and the manifest, last. A failure deletes what was written,
// the claim included, so the name stays free.
func (x *Exporter) CreateRelease(ctx context.Context, rp *ReleasePlan) (info ReleaseInfo, err error) {
	if x.artifacts == nil || x.items == nil {
		return info, errors.New("export: releases need an item store and export storage")
	}
	if err := x.checkFreeSpace(ctx); err != nil {
		return info, err
	}
	start := x.clock.Now().UTC()
	res := Result{SnapshotAt: start.Format("20060102T150405Z"), StartedAt: start}
	dir := ReleaseDir(rp.Name)
	info = ReleaseInfo{Name: rp.Name, ManifestPath: dir + "/" + manifestName}
	if err := x.claimRelease(ctx, rp.Name); err != nil {
		return info, err
	}
	defer func() {
		if err != nil {
			if _, derr := x.artifacts.DeletePrefix(context.WithoutCancel(ctx), dir+"/"); derr != nil {
				x.log.WarnContext(ctx, "could not delete a failed release", "release", rp.Name, "err", derr)
			}
			err = writeFailure(ctx, err)
		}
	}()

	var strata map[string]string
	if rp.stratifyBy != "" {
		if strata, err = x.stratify(ctx, rp); err != nil {
			return info, err
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	header := x.header(rp.plan, res)
	files := map[string][]*releaseFile{} // by split
	var all []*releaseFile
	for _, s := range rp.splits {
		for _, f := range rp.formats {
			df, err := x.openDataFile(wctx, dir, s.Name+"."+f.Extension(), f, header)
			if err != nil {
				cancel()
				for _, o := range all {
					o.finish(err, cancel)
				}
				return info, err
			}
			rf := &releaseFile{dataFile: df}
			rf.raw, _ = df.enc.(rawEncoder)
			rf.compact, _ = df.enc.(*lineEncoder)
			files[s.Name] = append(files[s.Name], rf)
			all = append(all, rf)
		}
	}

	items := itemLog{dir: x.tmp}
	defer items.close()
	counts := newReleaseCounts()
	content := sha256.New()
	var (
		cur     []*releaseFile
		split   string
		itemSum hash.Hash = sha256.New()
		line    []byte
		records int
	)
	// write hashes a record's compact JSON (line) into its item's sum and writes the record
	// to every file of the item's split.
	write := func(rec Record, raw *rawRecord) error {
		itemSum.Write(append(line, '\n'))
		records++
		for _, f := range cur {
			if err := f.write(rec, raw, line); err != nil {
				return err
			}
		}
		return nil
	}
	s := sink{
		counts: true,
		start: func(r itemRef) error {
			split = gtc.SplitAt(rp.splits, gtc.SplitHash(r.DatasetName, r.ID))
			if strata != nil {
				split = strata[stratumKey(r.DatasetName, r.ID)]
			}
			cur = files[split]
			itemSum.Reset()
			return nil
		},
		rec: func(r Record) error {
			var err error
			if line, err = AppendJSON(line[:0], r); err != nil {
				return err
			}
			return write(r, nil)
		},
		item: func(r itemRef) error {
			e := ReleaseItem{DatasetName: r.DatasetName, Bucket: r.bucket, ID: r.ID, Revision: r.Revision,
				SHA256: hex.EncodeToString(itemSum.Sum(nil)), Split: split}
			fmt.Fprintf(content, "%s\x00%s\x00%d\x00%s\n", e.DatasetName, e.ID, e.Revision, e.SHA256)
			counts.add(r, split)
			return items.add(e)
		},
	}
	if !slices.ContainsFunc(all, func(f *releaseFile) bool { return f.raw == nil }) {
		s.raw = func(r *rawRecord) error {
			line = r.appendTo(line[:0])
			return write(nil, r)
		}
	}
	n, runErr := x.run(wctx, rp.plan, s, nil)
	if runErr == nil && n == 0 {
		runErr = gtc.ValidationError([]gtc.FieldError{{Field: "filters",
			Message: "No item matches the release's selection; an empty release is not made"}})
	}
	var entries []FileEntry
	for _, f := range all {
		entry, err := f.finish(runErr, cancel)
		if runErr == nil && err != nil {
			runErr = err
		}
		entries = append(entries, entry)
	}
	if runErr != nil {
		return info, runErr
	}
	slices.SortFunc(entries, func(a, b FileEntry) int { return strings.Compare(a.Name, b.Name) })

	info.Count, info.Records = n, records
	info.ContentHash = "sha256:" + hex.EncodeToString(content.Sum(nil))
	card, err := x.writeCard(ctx, rp, dir, info, counts, entries)
	if err != nil {
		return info, err
	}
	entries = append(entries, card)
	createdAt := gtc.FormatAPITime(res.StartedAt)
	head := []member{
		{"schemaVersion", SchemaVersion},
		{"name", rp.Name},
		{"createdAt", createdAt},
		{"createdBy", rp.plan.Actor},
		{"notes", rp.notes},
		{"selection", orderedObject(rp.selection)},
		{"contentHash", info.ContentHash},
		{"count", n},
		{"records", records},
		{"counts", counts.object()},
	}
	eachFile := func(fn func([]byte) error) error {
		for _, e := range entries {
			b, err := AppendJSON(nil, e)
			if err != nil {
				return err
			}
			if err := fn(b); err != nil {
				return err
			}
		}
		return nil
	}
	if err := x.putManifest(ctx, info.ManifestPath, head, eachFile, &items); err != nil {
		return info, err
	}
	return info, nil
}

// claimRelease takes the release's name: 409 when a release, live, being written or deleted,
// has it.
func (x *Exporter) claimRelease(ctx context.Context, name string) error {
	_, err := x.artifacts.Put(ctx, ReleaseDir(name)+"/"+reservedName, bytes.NewReader(nil),
		gtc.PutOptions{ContentType: gtc.ContentTypeOctet, IfNotExists: true})
	if !errors.Is(err, gtc.ErrArtifactExists) {
		return err
	}
	if _, serr := x.artifacts.Stat(ctx, ReleaseDir(name)+"/"+tombstoneName); serr == nil {
		return gtc.Errorf(gtc.CodeReleaseExists, "Release name '%s' belonged to a deleted release; a name is never reused", name)
	}
	return gtc.Errorf(gtc.CodeReleaseExists, "Release '%s' already exists", name)
}

// releaseCounts are a release's item counts by dataset, status, tag and split.
type releaseCounts struct {
	datasets, statuses, tags, splits map[string]int
}

func newReleaseCounts() *releaseCounts {
	return &releaseCounts{map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}}
}

func (c *releaseCounts) add(r itemRef, split string) {
	c.datasets[r.DatasetName]++
	c.statuses[string(r.status)]++
	for _, t := range r.tags {
		c.tags[t]++
	}
	c.splits[split]++
}

func (c *releaseCounts) object() orderedObject {
	return orderedObject{{"datasets", c.datasets}, {"statuses", c.statuses}, {"tags", c.tags}, {"splits", c.splits}}
}

// orderedObject is a JSON object written with its keys in the given order.
type orderedObject []member

// MarshalJSON writes the members in order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = AppendJSON(b, m.key); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = AppendJSON(b, m.val); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// stratumKey keys an item in the strata map.
func stratumKey(datasetName, id string) string { return datasetName + "\x00" + id }

// stratify assigns every selected item its split, stratum by stratum: the items with the same
// value of the stratifying tag group (or none) are ordered by their split hash and cut at the
// ratios, so each stratum's splits have the ratios' sizes to within one item. An item keeps its
// split while its stratum keeps its members; an item joining or leaving a stratum can move
// the items next to the cut.
func (x *Exporter) stratify(ctx context.Context, rp *ReleasePlan) (map[string]string, error) {
	type entry struct {
		key string
		u   float64
	}
	strata := map[string][]entry{}
	spec := gtc.ScanSpec{Statuses: rp.plan.Statuses, DatasetNames: rp.plan.DatasetNames, Order: gtc.ByDatasetID}
	prefix := rp.stratifyBy + ":"
	for cursor := ""; ; {
		p, err := x.items.Scan(ctx, spec, cursor, x.pageSize)
		if err != nil {
			return nil, err
		}
		for _, it := range p.Items {
			if rp.plan.Select != nil && !rp.plan.Select(it) {
				continue
			}
			value := ""
			for _, t := range it.Tags() {
				if strings.HasPrefix(t, prefix) {
					value = t
					break
				}
			}
			strata[value] = append(strata[value], entry{stratumKey(it.DatasetName, it.ID), gtc.SplitHash(it.DatasetName, it.ID)})
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	out := map[string]string{}
	for _, members := range strata {
		slices.SortFunc(members, func(a, b entry) int {
			if a.u != b.u {
				if a.u < b.u {
					return -1
				}
				return 1
			}
			return strings.Compare(a.key, b.key)
		})
		for i, m := range members {
			out[m.key] = gtc.SplitAt(rp.splits, (float64(i)+0.5)/float64(len(members)))
		}
	}
	return out, nil
}
