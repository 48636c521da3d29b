package migrate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// CheckpointVersion is the format version of checkpoint files.
const CheckpointVersion = 1

// Phases of a run, in order.
const (
	PhaseItems      = "items"
	PhaseDuplicates = "duplicates"
	PhaseTags       = "tags"
	PhaseMarker     = "marker"
	PhaseDone       = "done"
)

// Scope is what makes two runs the same run: the datasets and the flags that change results.
type Scope struct {
	Datasets []string `json:"datasets"`
	// TagMap is the SHA-256 of the --tag-map file's content, "" without one.
	TagMap string `json:"tagMap"`
	NoMove bool   `json:"noMove"`
}

// NewScope builds the scope of a run; datasets are sorted and de-duplicated.
func NewScope(datasets []string, tagMapContent []byte, noMove bool) Scope {
	s := Scope{Datasets: slices.Compact(slices.Sorted(slices.Values(datasets))), NoMove: noMove}
	if s.Datasets == nil {
		s.Datasets = []string{}
	}
	if tagMapContent != nil {
		sum := sha256.Sum256(tagMapContent)
		s.TagMap = hex.EncodeToString(sum[:])
	}
	return s
}

// Hash is the first 12 hex digits of the SHA-256 of the scope; it names the default
// checkpoint file.
func (s Scope) Hash() string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// Counters are the summary's counts, carried on by a resumed run.
type Counters struct {
	Total             int              `json:"total"`
	Migrated          int              `json:"migrated"`
	Skipped           int              `json:"skipped"`
	Reindexed         int              `json:"reindexed"`
	Moved             int              `json:"moved"`
	Failed            int              `json:"failed"`
	Errors            []string         `json:"errors"`
	Warnings          []SummaryWarning `json:"warnings"`
	WarningCounts     map[string]int   `json:"warningCounts,omitempty"`
	ErrorsTruncated   bool             `json:"errorsTruncated,omitempty"`
	WarningsTruncated bool             `json:"warningsTruncated,omitempty"`
}

func countersOf(s *Summary) Counters {
	return Counters{
		Total: s.Total, Migrated: s.Migrated, Skipped: s.Skipped, Reindexed: s.Reindexed, Moved: s.Moved,
		Failed: s.Failed, Errors: s.Errors, Warnings: s.Warnings, WarningCounts: s.WarningCounts,
		ErrorsTruncated: s.ErrorsTruncated, WarningsTruncated: s.WarningsTruncated,
	}
}

func (c Counters) restore(s *Summary) {
	s.Total, s.Migrated, s.Skipped, s.Reindexed, s.Moved, s.Failed = c.Total, c.Migrated, c.Skipped, c.Reindexed, c.Moved, c.Failed
	if c.Errors != nil {
		s.Errors = c.Errors
	}
	if c.Warnings != nil {
		s.Warnings = c.Warnings
	}
	for code, n := range c.WarningCounts {
		s.WarningCounts[code] += n
	}
	s.ErrorsTruncated, s.WarningsTruncated = c.ErrorsTruncated, c.WarningsTruncated
}

// Checkpoint is the content of a checkpoint file.
type Checkpoint struct {
	Version   int       `json:"version"`
	Scope     Scope     `json:"scope"`
	ScopeHash string    `json:"scopeHash"`
	RunID     string    `json:"runId"`
	Cursor    string    `json:"cursor"`
	Counters  Counters  `json:"counters"`
	StartedAt time.Time `json:"startedAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Phase     string    `json:"phase"`
}

// CheckpointFile is where a run keeps its checkpoint.
type CheckpointFile struct {
	Path  string
	Scope Scope
	// Now stamps startedAt and updatedAt (default time.Now).
	Now func() time.Time
}

// DefaultCheckpointPath is $GTC_DATA_DIR/migrate-<scope hash>.checkpoint.json.
func DefaultCheckpointPath(dataDir string, s Scope) string {
	return filepath.Join(dataDir, "migrate-"+s.Hash()+".checkpoint.json")
}

// Load reads the checkpoint; ok is false when there is none or it cannot be read (a
// damaged checkpoint is ignored: the run starts over, which idempotence makes safe).
func (f *CheckpointFile) Load() (*Checkpoint, bool) {
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, false
	}
	var cp Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil || cp.Version != CheckpointVersion {
		return nil, false
	}
	return &cp, true
}

// Save writes cp atomically: a temporary file in the same directory, synced, then renamed
// over the old one, so a crash leaves either the old or the new checkpoint.
func (f *CheckpointFile) Save(cp *Checkpoint) error {
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	t := now().UTC()
	if cp.StartedAt.IsZero() {
		cp.StartedAt = t
	}
	cp.UpdatedAt = t
	b, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(f.Path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.Write(append(b, '\n'))
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(name, f.Path)
	}
	if werr != nil {
		_ = os.Remove(name)
		return fmt.Errorf("checkpoint %s: %w", f.Path, werr)
	}
	return nil
}
