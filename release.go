package gtc

import (
	"crypto/sha256"
	"encoding/binary"
	"regexp"
)

// A release is a named, immutable snapshot of a selection of items, each pinned at its
// revision, written through the export pipeline into export storage. Its name is unique for
// good: deleting a release leaves a tombstone, so the name is never given to other content.

// ReleaseRequest is what a caller asks a release to hold.
type ReleaseRequest struct {
	Name        string
	Datasets    []string // nil: every dataset
	Status      *string  // nil: approved; "": every status
	Tags        []string // an item must carry every one
	ExcludeTags []string // an item must carry none
	Splits      []Split  // nil: one split, "all"
	StratifyBy  string   // a tag group, or ""
	Formats     []string // nil: the default formats
	Notes       string
}

// Split is one named share of a release's items.
type Split struct {
	Name  string  `json:"name"`
	Ratio float64 `json:"ratio"`
}

// AllSplit names the one split of a release that asked for none.
const AllSplit = "all"

var (
	releaseNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
	splitNameRE   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
)

// ValidReleaseName reports whether s may name a release: a letter or digit, then up to 99
// letters, digits, '.', '_' or '-'.
func ValidReleaseName(s string) bool { return releaseNameRE.MatchString(s) }

// ValidSplitName reports whether s may name a split: a lower-case letter, then up to 31
// lower-case letters, digits or '_' (names that every dataset loader accepts).
func ValidSplitName(s string) bool { return splitNameRE.MatchString(s) }

// SplitHash places an item on [0, 1) by a hash of its dataset and id alone, so it falls in
// the same place in every release.
func SplitHash(datasetName, id string) float64 {
	h := sha256.New()
	h.Write([]byte(datasetName))
	h.Write([]byte{0})
	h.Write([]byte(id))
	var sum [sha256.Size]byte
	return float64(binary.BigEndian.Uint64(h.Sum(sum[:0]))>>11) / (1 << 53)
}

// SplitAt returns the split whose share of [0, 1) holds u; the splits share it in order.
func SplitAt(splits []Split, u float64) string {
	acc := 0.0
	for _, s := range splits {
		acc += s.Ratio
		if u < acc {
			return s.Name
		}
	}
	return splits[len(splits)-1].Name
}
